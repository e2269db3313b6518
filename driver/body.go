package driver

import (
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/driver/workload"
)

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// completionBody and chatBody are the request bodies, with the fields vllm
// bench serve sends. Struct field order fixes the byte order of the JSON.
type completionBody struct {
	Model         string        `json:"model"`
	Prompt        string        `json:"prompt"`
	Temperature   float64       `json:"temperature"`
	MaxTokens     int           `json:"max_tokens"`
	IgnoreEOS     bool          `json:"ignore_eos"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	sampling
}

// sampling holds the optional sampling parameters; unset ones are left
// out of the body, so the server's defaults apply.
type sampling struct {
	TopP float64 `json:"top_p,omitempty"`
	TopK int     `json:"top_k,omitempty"`
	MinP float64 `json:"min_p,omitempty"`
}

type chatBody struct {
	Model               string        `json:"model"`
	Messages            []message     `json:"messages"`
	Temperature         float64       `json:"temperature"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	IgnoreEOS           bool          `json:"ignore_eos"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	sampling
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// conversation is a prompt as a list of messages: an optional system
// prompt, then alternating user and assistant turns ending with a user turn.
type conversation struct {
	system string
	turns  []string
}

// tokens counts every message's content with tok (the client-side prompt
// length; a chat template adds server-side tokens).
func (c conversation) tokens(tok workload.Tokenizer) int {
	n := tok.Count(c.system)
	for _, t := range c.turns {
		n += tok.Count(t)
	}
	return n
}

// renderer turns conversations into bodies for one endpoint and model.
type renderer struct {
	chat        bool
	model       string
	temperature float64
	ignoreEOS   bool
	sampling    sampling
	extra       map[string]any
	// template renders bodies of one plain prompt without marshalling
	// (nil: always marshal).
	template *bodyTemplate
}

func newRenderer(cfg Config) renderer {
	w := cfg.Workload
	r := renderer{chat: cfg.Endpoint == ChatEndpoint, model: cfg.Model, temperature: w.Temperature, ignoreEOS: *w.IgnoreEOS,
		sampling: sampling{TopP: w.TopP, TopK: w.TopK, MinP: w.MinP}, extra: w.ExtraBody}
	r.template = newBodyTemplate(r)
	return r
}

func (r renderer) body(c conversation, maxTokens int) ([]byte, error) {
	if r.template != nil && c.system == "" && len(c.turns) == 1 {
		if b, ok := r.template.render(c.turns[0], maxTokens); ok {
			return b, nil
		}
	}
	var v any
	if r.chat {
		msgs := make([]message, 0, len(c.turns)+1)
		if c.system != "" {
			msgs = append(msgs, message{Role: "system", Content: c.system})
		}
		for i, t := range c.turns {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, message{Role: role, Content: t})
		}
		v = chatBody{Model: r.model, Messages: msgs, Temperature: r.temperature, MaxCompletionTokens: maxTokens,
			IgnoreEOS: r.ignoreEOS, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}, sampling: r.sampling}
	} else {
		// Completions see the conversation as one text: white space only
		// separates tokens, so the count is the sum of the parts'.
		prompt := c.system
		for _, t := range c.turns {
			if prompt != "" {
				prompt += " "
			}
			prompt += t
		}
		v = completionBody{Model: r.model, Prompt: prompt, Temperature: r.temperature, MaxTokens: maxTokens,
			IgnoreEOS: r.ignoreEOS, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}, sampling: r.sampling}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding request body: %w", err)
	}
	if len(r.extra) > 0 {
		return mergeBody(b, r.extra)
	}
	return b, nil
}
