package sim

import (
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Shape is a request body without its prompt and length: what every
// request of a run shares (model, sampling, stream, kv_transfer_params).
// A FleetRequest with a Shape carries its prompt as token ids, so the
// engine neither parses a body nor tokenizes a prompt; the request it
// builds is the one parseGenBody builds from the body with that prompt.
type Shape struct {
	g     genRequest
	param string // max_tokens or max_completion_tokens
	max   *int   // the body's own length (nil: not given)
	// markers are the user and assistant role markers a chat prompt of
	// spans is wrapped in: one-id spans every request shares.
	markers [2]uint16
}

// Shape parses body, a completions (chat=false) or chat body of one
// prompt, as worker w's engine would and keeps all but its prompt and
// length. A body the engine refuses for other reasons than those two is an
// error carrying the engine's message.
func (f *Fleet) Shape(w int, body []byte, chat bool) (*Shape, error) {
	if w < 0 || w >= len(f.servers) {
		return nil, fmt.Errorf("sim fleet: no worker %d", w)
	}
	cfg := &f.servers[w].cfg
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		e := jsonError(err)
		return nil, fmt.Errorf("%s: %s", e.typ, e.msg)
	}
	// The prompt and the length are the requests' own: a one-token prompt
	// and no length check stand for them here.
	g, e := parseGenBody(shapeBody(body, &wr), chat, cfg)
	if e != nil {
		return nil, fmt.Errorf("%s: %s", e.typ, e.msg)
	}
	s := &Shape{g: *g, param: "max_tokens", max: wr.MaxTokens,
		markers: [2]uint16{uint16(roleMarker("user")), uint16(roleMarker("assistant"))}}
	if wr.MaxCompletionTokens != nil {
		s.param, s.max = "max_completion_tokens", wr.MaxCompletionTokens
	}
	s.g.prompt, s.g.maxTokens, s.g.minTokens = nil, 0, wr.MinTokens
	return s, nil
}

// shapeBody is body with a one-word prompt and a length of 1 (min_tokens
// dropped with it): what parseGenBody checks besides them.
func shapeBody(body []byte, wr *wireRequest) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if _, ok := m["messages"]; ok {
		m["messages"] = json.RawMessage(`[{"role":"user","content":"a"}]`)
	} else {
		m["prompt"] = json.RawMessage(`"a"`)
	}
	one := json.RawMessage("1")
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if _, ok := m[k]; ok {
			m[k] = one
		}
	}
	if wr.MinTokens > 0 {
		delete(m, "min_tokens")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return b
}

// request is the shape's request with its prompt, flat or as spans (a
// chat body's single user message content), and length maxTokens (0: the
// body's own), checked against cfg's context length as the body would be.
func (s *Shape) request(prompt []int, spans []tokenizer.Span, maxTokens int, cfg *config) (*genRequest, *apiError) {
	g, e := s.withPrompt(prompt, spans)
	if e != nil {
		return nil, e
	}
	mt := s.max
	if maxTokens > 0 {
		mt = &maxTokens
	}
	if e := g.setLength(mt, s.param, cfg); e != nil {
		return nil, e
	}
	return g, nil
}

// withPrompt is the shape's request with prompt (or spans) checked as
// its prompt and its length not yet set.
func (s *Shape) withPrompt(prompt []int, spans []tokenizer.Span) (*genRequest, *apiError) {
	g := s.g
	var e *apiError
	if spans != nil {
		g.spans, e = s.spansPrompt(spans)
	} else {
		g.prompt, e = s.flatPrompt(prompt)
	}
	if e != nil {
		return nil, e
	}
	return &g, nil
}

// flatPrompt is prompt checked, between the role markers for chat.
func (s *Shape) flatPrompt(prompt []int) ([]int, *apiError) {
	if len(prompt) == 0 {
		return nil, emptyPrompt()
	}
	for _, id := range prompt {
		if id < 0 || id >= tokenizer.VocabSize {
			return nil, outOfVocabulary(id)
		}
	}
	if !s.g.chat {
		return prompt, nil
	}
	p := make([]int, 0, len(prompt)+2)
	return append(append(append(p, roleMarker("user")), prompt...), roleMarker("assistant")), nil
}

// spansPrompt is spans checked, between the role markers for chat: each
// a one-id span of its own (Key 0), the spans themselves not copied.
func (s *Shape) spansPrompt(spans []tokenizer.Span) ([]tokenizer.Span, *apiError) {
	if tokenizer.SpansLen(spans) == 0 {
		return nil, emptyPrompt()
	}
	for _, sp := range spans {
		if belowVocabulary(sp.IDs) { // a blind span's too: it has none
			continue
		}
		for _, id := range sp.IDs {
			if id >= tokenizer.VocabSize {
				return nil, outOfVocabulary(int(id))
			}
		}
	}
	if !s.g.chat {
		return spans, nil
	}
	p := make([]tokenizer.Span, 0, len(spans)+2)
	p = append(append(p, tokenizer.Span{IDs: s.markers[:1]}), spans...)
	return append(p, tokenizer.Span{IDs: s.markers[1:]}), nil
}

// belowVocabulary reports that every id is below VocabSize when their
// bitwise OR is (no id exceeds it): eight ids an operation, a third of
// the time of comparing each over a prompt's every token. VocabSize is a
// power of two, so the converse holds too and only a prompt it refuses
// is scanned again for the id to name.
func belowVocabulary(ids []uint16) bool {
	var or uint16
	for ; len(ids) >= 8; ids = ids[8:] {
		or |= ids[0] | ids[1] | ids[2] | ids[3] | ids[4] | ids[5] | ids[6] | ids[7]
	}
	for _, id := range ids {
		or |= id
	}
	return or < tokenizer.VocabSize
}

func emptyPrompt() *apiError { return badRequest("prompt", "The prompt cannot be empty.") }

func outOfVocabulary(id int) *apiError {
	return badRequest("prompt", "Token id %d is out of vocabulary", id)
}
