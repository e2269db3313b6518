package sim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// wireRequest is the union of the completions and chat request fields the
// simulator reads. Fields it does not model (top_p, top_k, user, …) are
// accepted and ignored, as clients send them freely.
type wireRequest struct {
	Model               string            `json:"model"`
	Prompt              json.RawMessage   `json:"prompt"`
	Messages            []wireMessage     `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stream              bool              `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	Logprobs            json.RawMessage   `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	Temperature         *float64          `json:"temperature"`
	Seed                *int64            `json:"seed"`
	Stop                json.RawMessage   `json:"stop"`
	StopTokenIDs        []int             `json:"stop_token_ids"`
	IgnoreEOS           bool              `json:"ignore_eos"`
	MinTokens           int               `json:"min_tokens"`
	N                   *int              `json:"n"`
	Echo                bool              `json:"echo"`
	KVTransferParams    *KVTransferParams `json:"kv_transfer_params"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// genRequest is a validated generation request.
type genRequest struct {
	chat bool
	// prompt is the prompt's ids, or spans holds them (FleetRequest.Spans).
	prompt       []int
	spans        []tokenizer.Span
	maxTokens    int
	stream       bool
	includeUsage bool
	logprobs     int // -1: none; else top-k alternatives per token
	temperature  float64
	seed         *int64
	stops        []string
	stopIDs      []int
	ignoreEOS    bool
	minTokens    int
	kv           *KVTransferParams
}

// parseGenRequest reads and validates a completions (chat=false) or chat
// completions body against the served model's limits.
func parseGenRequest(r *http.Request, chat bool, cfg *config) (*genRequest, *apiError) {
	body, aerr := readBody(r)
	if aerr != nil {
		return nil, aerr
	}
	return parseGenBody(body, chat, cfg)
}

// parseGenBody validates a completions or chat body; the HTTP handler and
// the virtual-time Fleet both parse with it.
func parseGenBody(body []byte, chat bool, cfg *config) (*genRequest, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	if w.Model != "" && w.Model != cfg.model {
		return nil, &apiError{status: http.StatusNotFound, typ: typeNotFound, param: "model",
			msg: fmt.Sprintf("The model `%s` does not exist.", w.Model)}
	}
	g := &genRequest{chat: chat, stream: w.Stream, ignoreEOS: w.IgnoreEOS, seed: w.Seed, stopIDs: w.StopTokenIDs,
		kv: w.KVTransferParams, temperature: 1, logprobs: -1}
	var perr *apiError
	if chat {
		g.prompt, perr = chatPrompt(w.Messages)
	} else {
		g.prompt, perr = completionPrompt(w.Prompt)
	}
	if perr != nil {
		return nil, perr
	}
	if len(g.prompt) == 0 {
		return nil, emptyPrompt()
	}
	if e := g.readSampling(&w); e != nil {
		return nil, e
	}
	if e := g.readLength(&w, cfg); e != nil {
		return nil, e
	}
	if e := g.readOptions(&w); e != nil {
		return nil, e
	}
	return g, nil
}

// readOptions reads what follows the length: logprobs, stream options, n
// and echo.
func (g *genRequest) readOptions(w *wireRequest) *apiError {
	if e := g.readLogprobs(w); e != nil {
		return e
	}
	if w.StreamOptions != nil {
		if !w.Stream {
			return badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.includeUsage = w.StreamOptions.IncludeUsage
	}
	if w.N != nil && *w.N != 1 {
		return badRequest("n", "n must be 1: the simulator returns one choice per request, got %d", *w.N)
	}
	if w.Echo {
		return badRequest("echo", "echo is not supported by the simulator")
	}
	return nil
}

// plainString is the value of raw, a JSON value already checked valid,
// when it is a string without escapes or non-ASCII bytes: its bytes are its
// value then, and decoding it again (the prompt is most of a body) is
// skipped.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, b := range inner {
		if b == '\\' || b == '"' || b < 0x20 || b >= 0x80 {
			return "", false
		}
	}
	return string(inner), true
}

func completionPrompt(raw json.RawMessage) ([]int, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is required")
	}
	if text, ok := plainString(raw); ok {
		return tokenizer.Tokenize(text), nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return tokenizer.Tokenize(text), nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) != 1 {
			return nil, badRequest("prompt", "prompt must be one string or one token list: the simulator does not batch prompts (got %d)", len(texts))
		}
		return tokenizer.Tokenize(texts[0]), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) != nil {
		var lists [][]int
		if json.Unmarshal(raw, &lists) != nil {
			return nil, badRequest("prompt", "prompt must be a string, a list of one string, or token ids")
		}
		if len(lists) != 1 {
			return nil, badRequest("prompt", "prompt must be one string or one token list: the simulator does not batch prompts (got %d)", len(lists))
		}
		ids = lists[0]
	}
	for _, id := range ids {
		if id < 0 || id >= tokenizer.VocabSize {
			return nil, outOfVocabulary(id)
		}
	}
	return ids, nil
}

func chatPrompt(msgs []wireMessage) ([]int, *apiError) {
	if len(msgs) == 0 {
		return nil, badRequest("messages", "messages is required and must not be empty")
	}
	cm := make([]ChatMessage, len(msgs))
	for i, m := range msgs {
		if roleMarker(m.Role) < 0 {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "unknown role %q (want system, user, assistant, tool or developer)", m.Role)
		}
		text, err := messageText(m.Content)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "%v", err)
		}
		cm[i] = ChatMessage{Role: m.Role, Content: text}
	}
	return ChatTemplate(cm), nil
}

// messageText accepts a string, null, or a list of text parts.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of text parts")
	}
	text := ""
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d has type %q: only text parts are supported", i, p.Type)
		}
		if i > 0 {
			text += "\n"
		}
		text += p.Text
	}
	return text, nil
}

func (g *genRequest) readSampling(w *wireRequest) *apiError {
	if w.Temperature != nil {
		if *w.Temperature < 0 || *w.Temperature != *w.Temperature {
			return badRequest("temperature", "temperature must be non-negative, got %v", *w.Temperature)
		}
		g.temperature = *w.Temperature
	}
	if len(w.Stop) > 0 && string(w.Stop) != "null" {
		var one string
		if json.Unmarshal(w.Stop, &one) == nil {
			g.stops = []string{one}
		} else if json.Unmarshal(w.Stop, &g.stops) != nil {
			return badRequest("stop", "stop must be a string or a list of strings")
		}
		for _, s := range g.stops {
			if s == "" {
				return badRequest("stop", "stop strings must not be empty")
			}
		}
	}
	if w.MinTokens < 0 {
		return badRequest("min_tokens", "min_tokens must be non-negative, got %d", w.MinTokens)
	}
	g.minTokens = w.MinTokens
	return nil
}

// readLength resolves max_tokens (max_completion_tokens wins for chat) and
// applies vLLM's context-length check.
func (g *genRequest) readLength(w *wireRequest, cfg *config) *apiError {
	mt, param := w.MaxTokens, "max_tokens"
	if w.MaxCompletionTokens != nil {
		mt, param = w.MaxCompletionTokens, "max_completion_tokens"
	}
	return g.setLength(mt, param, cfg)
}

// promptLen is the number of prompt tokens.
func (g *genRequest) promptLen() int {
	if g.spans != nil {
		return tokenizer.SpansLen(g.spans)
	}
	return len(g.prompt)
}

// setLength is readLength of the length mt asked for under param (nil: not
// asked).
func (g *genRequest) setLength(mt *int, param string, cfg *config) *apiError {
	p := g.promptLen()
	switch {
	case mt != nil:
		if *mt < 1 {
			return badRequest(param, "%s must be at least 1, got %d.", param, *mt)
		}
		g.maxTokens = *mt
	case g.chat:
		g.maxTokens = cfg.maxModelLen - p
	default:
		g.maxTokens = 16 // the OpenAI completions default
	}
	if p+g.maxTokens > cfg.maxModelLen || g.maxTokens < 1 {
		return badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			cfg.maxModelLen, p+max(g.maxTokens, 0), p, max(g.maxTokens, 0))
	}
	if g.minTokens > g.maxTokens {
		return badRequest("min_tokens", "min_tokens (%d) must be at most %s (%d)", g.minTokens, param, g.maxTokens)
	}
	return nil
}

func (g *genRequest) readLogprobs(w *wireRequest) *apiError {
	if len(w.Logprobs) == 0 || string(w.Logprobs) == "null" {
		if w.TopLogprobs != nil && g.chat && *w.TopLogprobs > 0 {
			return badRequest("top_logprobs", "top_logprobs requires logprobs to be true")
		}
		return nil
	}
	if g.chat {
		var on bool
		if json.Unmarshal(w.Logprobs, &on) != nil {
			return badRequest("logprobs", "invalid type for field \"logprobs\": want boolean")
		}
		if !on {
			return nil
		}
		g.logprobs = 0
		if w.TopLogprobs != nil {
			g.logprobs = *w.TopLogprobs
		}
	} else if json.Unmarshal(w.Logprobs, &g.logprobs) != nil {
		return badRequest("logprobs", "invalid type for field \"logprobs\": want integer")
	}
	if g.logprobs < 0 || g.logprobs > maxTopLogprobs {
		field := "logprobs" // chat's count is top_logprobs; logprobs is its switch
		if g.chat {
			field = "top_logprobs"
		}
		return badRequest(field, "%s must be between 0 and %d, got %d", field, maxTopLogprobs, g.logprobs)
	}
	return nil
}
