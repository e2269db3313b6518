package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// respond answers a non-streaming request once its sequence ends. It
// reports whether the answer was written.
func (s *Server) respond(ctx context.Context, w http.ResponseWriter, fl *follower) bool {
	rs := &respondSink{fl: fl}
	if err := fl.run(ctx, rs, false); err != nil {
		writeEngineError(w, err)
		return false
	}
	if flt := s.faults.Load(); flt.Stall && !stallFor(ctx, s.cfg.clock, flt.StallFor) {
		return false
	}
	usage := usageJSON{PromptTokens: len(fl.req.prompt), CompletionTokens: fl.completion,
		TotalTokens:         len(fl.req.prompt) + fl.completion,
		PromptTokensDetails: &promptDetails{CachedTokens: int(fl.sq.cachedTokens.Load())}}
	var logprobs json.RawMessage
	if fl.req.logprobs >= 0 {
		logprobs = rs.logprobs()
	}
	stopReason := fl.stopReason
	var kv *KVTransferParams
	if fl.sq.holdKV && fl.finish == "length" && fl.sq.heldBlocks != nil {
		kv = s.kvParamsFor(fl.eng, fl.sq)
	}
	var body any
	if fl.req.chat {
		body = chatResponse{ID: fl.sq.id, Object: "chat.completion", Created: s.created, Model: s.cfg.model,
			Choices: []chatChoice{{Message: chatMessageJSON{Role: "assistant", Content: rs.text.String(), ToolCalls: []any{}},
				Logprobs: logprobs, FinishReason: fl.finish, StopReason: stopReason}},
			Usage: usage, KVTransferParams: kv}
	} else {
		body = completionResponse{ID: fl.sq.id, Object: "text_completion", Created: s.created, Model: s.cfg.model,
			Choices: []completionChoice{{Text: rs.text.String(), Logprobs: logprobs, FinishReason: fl.finish, StopReason: stopReason}},
			Usage:   usage, KVTransferParams: kv}
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, msg: "encoding response: " + err.Error()})
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(b)
	return err == nil
}

// respondSink collects a whole answer.
type respondSink struct {
	fl      *follower
	text    strings.Builder
	offsets []int
	toks    []tokenLogprobs
}

func (rs *respondSink) token(pos, _ int, piece string, _ bool) error {
	if rs.fl.req.logprobs >= 0 {
		c := new([maxTopLogprobs]candidate)
		chosen := rs.fl.sq.samp.dist(pos, c)
		rs.toks = append(rs.toks, tokenLogprobs{pos: pos, chosen: chosen, cands: c, k: rs.fl.req.logprobs})
		rs.offsets = append(rs.offsets, rs.text.Len())
	}
	rs.text.WriteString(piece)
	return nil
}

func (rs *respondSink) flush() error { return nil }

func (rs *respondSink) logprobs() json.RawMessage {
	if !rs.fl.req.chat {
		return appendCompletionLogprobs(nil, rs.toks, rs.offsets)
	}
	b := []byte(`{"content":[`)
	for i, t := range rs.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.appendChat(b)
	}
	return append(b, "]}"...)
}

type usageJSON struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionResponse struct {
	ID               string             `json:"id"`
	Object           string             `json:"object"`
	Created          int64              `json:"created"`
	Model            string             `json:"model"`
	Choices          []completionChoice `json:"choices"`
	Usage            usageJSON          `json:"usage"`
	KVTransferParams *KVTransferParams  `json:"kv_transfer_params"`
}

type completionChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   string          `json:"finish_reason"`
	StopReason     any             `json:"stop_reason"`
	PromptLogprobs any             `json:"prompt_logprobs"`
}

type chatResponse struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Created          int64             `json:"created"`
	Model            string            `json:"model"`
	Choices          []chatChoice      `json:"choices"`
	Usage            usageJSON         `json:"usage"`
	PromptLogprobs   any               `json:"prompt_logprobs"`
	KVTransferParams *KVTransferParams `json:"kv_transfer_params"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessageJSON `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   any             `json:"stop_reason"`
}

type chatMessageJSON struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []any  `json:"tool_calls"`
}
