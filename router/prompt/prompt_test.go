package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceText is the router's former extraction, re-parsing every level
// with encoding/json: quadratic in the nesting depth, but the meaning
// AppendText must keep.
func referenceText(sb *strings.Builder, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			sb.WriteString(s)
			return
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			for _, it := range items {
				referenceText(sb, it)
			}
			return
		}
	case '{':
		var part struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(raw, &part) == nil && part.Text != nil {
			referenceText(sb, part.Text)
			return
		}
	}
	sb.Write(raw)
	sb.WriteByte(' ')
}

// referenceCount is router/pd's former EstimateTokens walk.
func referenceCount(raw json.RawMessage) Counts {
	var c Counts
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return
		}
		switch raw[0] {
		case '"':
			var s string
			if json.Unmarshal(raw, &s) == nil {
				c.Chars += utf8.RuneCountInString(s)
			}
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil {
				for _, it := range items {
					walk(it)
				}
			}
		case '{':
			var part struct {
				Type string          `json:"type"`
				Text json.RawMessage `json:"text"`
			}
			if json.Unmarshal(raw, &part) == nil && (part.Type == "" || part.Type == "text") {
				walk(part.Text)
			}
		default:
			if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
				c.IDs++
			}
		}
	}
	walk(raw)
	return c
}

// depth is the deepest bracket nesting of valid JSON.
func depth(raw []byte) int {
	s := &scanner{b: raw}
	d, deepest := 0, 0
	for s.peek() != 0 {
		switch s.b[s.i] {
		case '"':
			_, _, _ = s.str()
			continue
		case '[', '{':
			d++
			deepest = max(deepest, d)
		case ']', '}':
			d--
		}
		s.i++
	}
	return deepest
}

var seeds = []string{
	`"plain prompt"`, `["a","b"]`, `[1,2,3]`, `[[1,2],[3]]`, `null`, ``, ` "x" `,
	`[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"u"}}]`,
	`{"text":"a","text":"b"}`, `{"TEXT":"upper"}`, `{"te\u0078t":"escaped key"}`, `{"text":null}`,
	`{"type":7,"text":"bad type"}`, `{"type":"image","type":null,"text":"x"}`, `{"type":null,"text":"t"}`,
	`[true,false,null,-1.5e3]`, `"esc\"aped \u00e9 \ud83d\ude00"`, `{"a":[[[{"text":"deep"}]]]}`,
	`[{"text":{"text":["x",{"text":"y"}]}}]`, `"invalid utf8 \xff"`,
	strings.Repeat("[", MaxDepth) + `"at the limit"` + strings.Repeat("]", MaxDepth),
	strings.Repeat("[", MaxDepth+1) + `"past the limit"` + strings.Repeat("]", MaxDepth+1),
	`[1,`, `{"text":`, `"unterminated`, `]`, `{"a" 1}`, `[1 2]`,
}

// check compares AppendText and Count with the references on valid JSON,
// and only asks for no panic on anything else.
func check(t *testing.T, raw []byte) {
	text, terr := AppendText(nil, raw)
	counts, cerr := Count(raw)
	if !json.Valid(raw) && len(bytes.Trim(raw, " \t\r\n")) > 0 {
		return
	}
	if deep := depth(raw) > MaxDepth; deep || errors.Is(terr, ErrTooDeep) || errors.Is(cerr, ErrTooDeep) {
		// The walk may stop before the deep part (a skipped member), so a
		// deep value need not fail; a shallow one must never.
		if !deep {
			t.Fatalf("%q: ErrTooDeep (%v, %v) at depth %d ≤ %d", raw, terr, cerr, depth(raw), MaxDepth)
		}
		return
	}
	if terr != nil || cerr != nil {
		t.Fatalf("%q: valid JSON refused: %v, %v", raw, terr, cerr)
	}
	var sb strings.Builder
	referenceText(&sb, raw)
	if string(text) != sb.String() {
		t.Fatalf("AppendText(%q) = %q, reference %q", raw, text, sb.String())
	}
	if want := referenceCount(raw); counts != want {
		t.Fatalf("Count(%q) = %+v, reference %+v", raw, counts, want)
	}
}

func TestMatchesReference(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

func TestTooDeep(t *testing.T) {
	t.Parallel()
	raw := []byte(strings.Repeat("[", 9000) + strings.Repeat("]", 9000))
	if _, err := AppendText(nil, raw); !errors.Is(err, ErrTooDeep) {
		t.Errorf("AppendText on 9000 levels: %v, want ErrTooDeep", err)
	}
	if _, err := Count(raw); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Count on 9000 levels: %v, want ErrTooDeep", err)
	}
	// A deep member that is skipped (not text) costs a linear scan, no error.
	skipped := []byte(`{"image_url":` + string(raw) + `,"text":"t"}`)
	if got, err := AppendText(nil, skipped); err != nil || string(got) != "t" {
		t.Errorf("skipped deep member: %q, %v", got, err)
	}
}

func FuzzPromptText(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { check(t, raw) })
}
