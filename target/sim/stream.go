package sim

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// stream answers with server-sent events in vLLM's framing: for chat a
// first chunk with delta {"role":"assistant","content":""}, then one chunk
// per token (the last one carrying finish_reason and stop_reason), a usage
// chunk with empty choices when stream_options.include_usage is set, and
// data: [DONE]. Chunks carry "usage":null when include_usage is set.
// Headers go out with the first token, as vLLM's do. It reports whether
// every token and the end of the stream were written.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, fl *follower) bool {
	ss := &streamSink{w: w, rc: http.NewResponseController(w), fl: fl}
	ss.head = s.chunkHead(fl)
	err := fl.run(ctx, ss, true)
	if err != nil && !ss.started {
		writeEngineError(w, err)
		return false
	}
	if err != nil {
		// The stream is open: report in-band like vLLM, then end it.
		ss.buf = append(ss.buf[:0], "data: "...)
		ss.buf = append(ss.buf, `{"error":{"message":`...)
		ss.buf = appendJSONString(ss.buf, err.Error())
		ss.buf = append(ss.buf, `,"type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
		_ = ss.flush()
		return false
	}
	if fl.req.includeUsage {
		ss.buf = append(ss.buf, ss.head...)
		ss.buf = append(ss.buf, `"choices":[],"usage":`...)
		ss.buf = appendUsage(ss.buf, len(fl.req.prompt), fl.completion, int(fl.sq.cachedTokens.Load()))
		ss.buf = append(ss.buf, "}\n\n"...)
	}
	ss.buf = append(ss.buf, "data: [DONE]\n\n"...)
	return ss.flush() == nil
}

// chunkHead is the constant start of every chunk of a request:
// `data: {"id":…,"object":…,"created":…,"model":…,`.
func (s *Server) chunkHead(fl *follower) []byte {
	obj := "text_completion"
	if fl.req.chat {
		obj = "chat.completion.chunk"
	}
	b := []byte(`data: {"id":`)
	b = appendJSONString(b, fl.sq.id)
	b = append(b, `,"object":"`+obj+`","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, s.cfg.model)
	return append(b, ',')
}

type streamSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	fl      *follower
	head    []byte
	buf     []byte
	started bool
	offset  int // text offset for completions logprobs
	cands   [maxTopLogprobs]candidate
}

func (ss *streamSink) start() {
	h := ss.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	ss.w.WriteHeader(http.StatusOK)
	ss.started = true
	if ss.fl.req.chat {
		ss.buf = append(ss.buf, ss.head...)
		ss.buf = append(ss.buf, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		ss.buf = ss.endChunk(ss.buf)
	}
}

func (ss *streamSink) endChunk(b []byte) []byte {
	if ss.fl.req.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (ss *streamSink) token(pos, _ int, piece string, last bool) error {
	if !ss.started {
		ss.start()
	}
	fl := ss.fl
	b := append(ss.buf, ss.head...)
	if fl.req.chat {
		b = append(b, `"choices":[{"index":0,"delta":{"content":`...)
		b = appendJSONString(b, piece)
		b = append(b, `},"logprobs":`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":`...)
		b = appendJSONString(b, piece)
		b = append(b, `,"logprobs":`...)
	}
	if fl.req.logprobs >= 0 {
		chosen := fl.sq.samp.dist(pos, &ss.cands)
		lp := tokenLogprobs{pos: pos, chosen: chosen, cands: &ss.cands, k: fl.req.logprobs}
		if fl.req.chat {
			b = append(b, `{"content":[`...)
			b = lp.appendChat(b)
			b = append(b, "]}"...)
		} else {
			b = appendCompletionLogprobs(b, []tokenLogprobs{lp}, []int{ss.offset})
		}
	} else {
		b = append(b, "null"...)
	}
	ss.offset += len(piece)
	b = append(b, `,"finish_reason":`...)
	switch {
	case last:
		b = appendJSONString(b, fl.finish)
		b = append(b, `,"stop_reason":`...)
		b = appendStopReason(b, fl.stopReason)
	case fl.req.chat:
		b = append(b, "null"...)
	default:
		b = append(b, `null,"stop_reason":null`...)
	}
	b = append(b, "}]"...)
	ss.buf = ss.endChunk(b)
	return nil
}

func (ss *streamSink) flush() error {
	if len(ss.buf) == 0 {
		return nil
	}
	_, err := ss.w.Write(ss.buf)
	ss.buf = ss.buf[:0]
	if err != nil {
		return err
	}
	return ss.rc.Flush()
}

func appendStopReason(b []byte, r any) []byte {
	switch v := r.(type) {
	case string:
		return appendJSONString(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, "null"...)
}

func appendUsage(b []byte, prompt, completion, cached int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	return append(b, "}}"...)
}

// writeEngineError answers a request whose sequence the engine could not
// finish before any byte was sent.
func writeEngineError(w http.ResponseWriter, err error) {
	if errors.Is(err, errEngineStopped) {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: typeUnavailable, msg: "engine stopped before the request finished"})
		return
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the client is gone
	}
	writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, msg: err.Error()})
}

// tokenLogprobs is the logprob view of one output token.
type tokenLogprobs struct {
	pos    int
	chosen int
	cands  *[maxTopLogprobs]candidate
	k      int
}

func (t tokenLogprobs) piece(j int) string { return tokenizer.Piece(t.cands[j].id, t.pos == 0) }

// appendChat appends one entry of a chat logprobs "content" list.
func (t tokenLogprobs) appendChat(b []byte) []byte {
	b = appendChatLP(b, t.piece(t.chosen), t.cands[t.chosen].logprob)
	b = b[:len(b)-1] // reopen the object for top_logprobs
	b = append(b, `,"top_logprobs":[`...)
	for j := range t.k {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendChatLP(b, t.piece(j), t.cands[j].logprob)
	}
	return append(b, "]}"...)
}

func appendChatLP(b []byte, tok string, lp float64) []byte {
	b = append(b, `{"token":`...)
	b = appendJSONString(b, tok)
	b = append(b, `,"logprob":`...)
	b = appendFloat(b, lp)
	b = append(b, `,"bytes":`...)
	b = appendBytesArray(b, tok)
	return append(b, '}')
}

// appendCompletionLogprobs appends the completions logprobs object for
// tokens at text offsets.
func appendCompletionLogprobs(b []byte, toks []tokenLogprobs, offsets []int) []byte {
	b = append(b, `{"text_offset":[`...)
	for i, off := range offsets {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(off), 10)
	}
	b = append(b, `],"token_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, t.cands[t.chosen].logprob)
	}
	b = append(b, `],"tokens":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t.piece(t.chosen))
	}
	b = append(b, `],"top_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j := range t.k {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t.piece(j))
			b = append(b, ':')
			b = appendFloat(b, t.cands[j].logprob)
		}
		if t.chosen >= t.k { // the sampled token is always listed
			if t.k > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t.piece(t.chosen))
			b = append(b, ':')
			b = appendFloat(b, t.cands[t.chosen].logprob)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
