package driver

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// bodyTemplate is a renderer's body with its prompt and length cut out:
// a body of one plain prompt is the parts around them with the prompt and
// the length written in, byte for byte what encoding/json renders, without
// marshalling (which scanned every byte of a 12k-token prompt for escapes
// through reflection, a tenth of a virtual run's CPU).
type bodyTemplate struct {
	// parts are the bytes before, between and after the two holes; first
	// names the hole after parts[0].
	parts       [3][]byte
	promptFirst bool
}

// placeholders mark the holes: a prompt and a length no body holds
// otherwise (checked: each must occur exactly once).
const (
	promptHole = "autoinferPromptHole"
	lengthHole = 987654321987
)

// newBodyTemplate cuts r's body of one plain prompt; nil when the holes
// cannot be found exactly once (an extra_body naming them).
func newBodyTemplate(r renderer) *bodyTemplate {
	r.template = nil
	b, err := r.body(conversation{turns: []string{promptHole}}, lengthHole)
	if err != nil {
		return nil
	}
	length := []byte(strconv.Itoa(lengthHole))
	p, l := bytes.Index(b, []byte(promptHole)), bytes.Index(b, length)
	if p < 0 || l < 0 || bytes.Count(b, []byte(promptHole)) != 1 || bytes.Count(b, length) != 1 {
		return nil
	}
	t := &bodyTemplate{promptFirst: p < l}
	first, firstLen, second, secondLen := p, len(promptHole), l, len(length)
	if !t.promptFirst {
		first, firstLen, second, secondLen = l, len(length), p, len(promptHole)
	}
	t.parts = [3][]byte{b[:first], b[first+firstLen : second], b[second+secondLen:]}
	return t
}

// render is the body of prompt with maxTokens; false when prompt has a
// byte encoding/json would escape (the caller marshals then).
func (t *bodyTemplate) render(prompt string, maxTokens int) ([]byte, bool) {
	if !plainJSON(prompt) {
		return nil, false
	}
	parts := [1]string{prompt}
	return t.appendBody(make([]byte, 0, len(t.parts[0])+len(t.parts[1])+len(t.parts[2])+len(prompt)+20), parts[:], maxTokens), true
}

// appendBody appends the body of the prompt parts join to (workload.Join:
// the non-empty parts, one space between two) with maxTokens to dst. Every
// part must be plain JSON (generated text is: TestGeneratedTextIsPlainJSON).
func (t *bodyTemplate) appendBody(dst []byte, parts []string, maxTokens int) []byte {
	var num [20]byte
	n := strconv.AppendInt(num[:0], int64(maxTokens), 10)
	b := append(dst, t.parts[0]...)
	if t.promptFirst {
		b = append(append(appendJoined(b, parts), t.parts[1]...), n...)
	} else {
		b = appendJoined(append(append(b, n...), t.parts[1]...), parts)
	}
	return append(b, t.parts[2]...)
}

// appendJoined appends workload.Join(parts) to b.
func appendJoined(b []byte, parts []string) []byte {
	first := true
	for _, p := range parts {
		if p == "" {
			continue
		}
		if !first {
			b = append(b, ' ')
		}
		b, first = append(b, p...), false
	}
	return b
}

// plainJSON reports whether encoding/json writes s inside its quotes as it
// is: printable ASCII other than the quote, the backslash and the HTML
// characters it escapes (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
