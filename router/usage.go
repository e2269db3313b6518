package router

import (
	"bytes"
	"encoding/json"
	"strings"
)

// usage is the OpenAI usage object, as much of it as per-run accounting needs.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// usageTap watches a response body as it is relayed and finds its usage
// object without holding up or buffering the stream: SSE bodies are scanned
// line by line and only `data:` lines that carry a non-null usage are
// decoded; JSON bodies are kept up to a bound and decoded at the end.
type usageTap struct {
	sse   bool
	line  []byte // SSE: the current, unfinished line
	skip  bool   // SSE: the current line outgrew maxLine; ignore it
	json  []byte // JSON: the body so far
	over  bool   // JSON: the body outgrew maxJSONBody; no usage
	found *usage
}

const (
	maxSSELine  = 1 << 20
	maxJSONBody = 16 << 20
)

func newUsageTap(contentType string) *usageTap {
	return &usageTap{sse: strings.HasPrefix(contentType, "text/event-stream")}
}

// Write never fails: accounting must not break the relay.
func (t *usageTap) Write(p []byte) (int, error) {
	if !t.sse {
		if t.over || len(t.json)+len(p) > maxJSONBody {
			t.json, t.over = nil, true
		} else {
			t.json = append(t.json, p...)
		}
		return len(p), nil
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.grow(rest)
			break
		}
		t.grow(rest[:i])
		if !t.skip {
			t.sseLine(t.line)
		}
		t.line, t.skip = t.line[:0], false
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (t *usageTap) grow(b []byte) {
	if t.skip {
		return
	}
	if len(t.line)+len(b) > maxSSELine {
		t.line, t.skip = t.line[:0], true
		return
	}
	t.line = append(t.line, b...)
}

var usageKey = []byte(`"usage"`)

func (t *usageTap) sseLine(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok || !hasUsage(data) {
		return
	}
	var chunk struct {
		Usage *usage `json:"usage"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &chunk) == nil && chunk.Usage != nil {
		t.found = chunk.Usage
	}
}

// hasUsage reports whether data has a "usage" key whose value is not null.
// vLLM sends "usage": null in every chunk but the last, and decoding each of
// them would cost allocations per event; a quoted "usage" followed by a
// colon cannot occur inside a JSON string (its quotes would be escaped).
func hasUsage(data []byte) bool {
	for {
		i := bytes.Index(data, usageKey)
		if i < 0 {
			return false
		}
		data = bytes.TrimLeft(data[i+len(usageKey):], " \t")
		if rest, ok := bytes.CutPrefix(data, []byte(":")); ok {
			if !bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), []byte("null")) {
				return true
			}
		}
	}
}

// Usage returns the usage seen, if any.
func (t *usageTap) Usage() *usage {
	if !t.sse && t.found == nil && len(t.json) > 0 {
		var body struct {
			Usage *usage `json:"usage"`
		}
		if json.Unmarshal(t.json, &body) == nil {
			t.found = body.Usage
		}
	}
	return t.found
}
