package hf

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
)

// piece is a pre-tokenized part of a segment. first is set while the piece
// starts at the very beginning of the input (Metaspace's "first" scheme).
type piece struct {
	text  string
	first bool
}

// preTokenizer refines a list of pieces.
type preTokenizer func([]piece) ([]piece, error)

type preTokenizerJSON struct {
	Type           string            `json:"type"`
	PreTokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        pattern           `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Replacement    string            `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	Split          *bool             `json:"split"`
	Individual     bool              `json:"individual_digits"`
}

// gpt2Pattern is the ByteLevel pre-tokenizer's own split when use_regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func newPreTokenizers(raw json.RawMessage, where string) ([]preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var p preTokenizerJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	switch p.Type {
	case "Sequence":
		var out []preTokenizer
		for i, r := range p.PreTokenizers {
			sub, err := newPreTokenizers(r, fmt.Sprintf("%s.pretokenizers[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	case "Split":
		if p.Invert {
			return nil, fmt.Errorf("%s.invert: true is not supported", where)
		}
		re, err := p.Pattern.compile(where)
		if err != nil {
			return nil, err
		}
		return []preTokenizer{splitBy(re, p.Behavior)}, checkBehavior(p.Behavior, where)
	case "ByteLevel":
		return []preTokenizer{byteLevelPre(p.AddPrefixSpace, p.UseRegex == nil || *p.UseRegex)}, nil
	case "Metaspace":
		return []preTokenizer{metaspace(p)}, nil
	case "Digits":
		expr := `\p{Nd}+`
		if p.Individual {
			expr = `\p{Nd}`
		}
		return []preTokenizer{splitBy(regexp2.MustCompile(expr, regexp2.None), "Isolated")}, nil
	case "WhitespaceSplit":
		return []preTokenizer{splitBy(regexp2.MustCompile(`\s+`, regexp2.None), "Removed")}, nil
	}
	return nil, fmt.Errorf("%s.type: pre-tokenizer %q is not supported", where, p.Type)
}

func checkBehavior(b, where string) error {
	switch b {
	case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext":
		return nil
	}
	return fmt.Errorf("%s.behavior: %q is not supported", where, b)
}

// splitBy splits each piece at the matches of re. Isolated keeps matches
// as pieces of their own, Removed drops them, MergedWithPrevious and
// MergedWithNext glue each to the text before or after it.
func splitBy(re *regexp2.Regexp, behavior string) preTokenizer {
	return func(in []piece) ([]piece, error) {
		var out []piece
		for _, p := range in {
			parts, err := matches(re, p)
			if err != nil {
				return nil, err
			}
			out = append(out, mergeParts(parts, behavior)...)
		}
		return out, nil
	}
}

// part is a stretch of a piece that is or is not a match.
type part struct {
	piece
	match bool
}

// matches cuts p into alternating non-match and match parts (empty ones
// left out).
func matches(re *regexp2.Regexp, p piece) ([]part, error) {
	runes := []rune(p.text)
	var parts []part
	add := func(from, to int, match bool) {
		if to > from {
			parts = append(parts, part{piece{text: string(runes[from:to]), first: p.first && from == 0}, match})
		}
	}
	last := 0
	m, err := re.FindRunesMatch(runes)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		add(last, m.Index, false)
		add(m.Index, m.Index+m.Length, true)
		last = max(last, m.Index+m.Length)
	}
	if err != nil {
		return nil, fmt.Errorf("splitting: %w", err)
	}
	add(last, len(runes), false)
	return parts, nil
}

// mergeParts applies a split behavior to the parts of one piece.
func mergeParts(parts []part, behavior string) []piece {
	var out []piece
	var pending *piece // MergedWithNext: a match waiting for what follows
	for _, p := range parts {
		switch {
		case behavior == "Isolated":
			out = append(out, p.piece)
		case behavior == "Removed":
			if !p.match {
				out = append(out, p.piece)
			}
		case behavior == "MergedWithPrevious":
			if p.match && len(out) > 0 {
				out[len(out)-1].text += p.text
			} else {
				out = append(out, p.piece)
			}
		case p.match: // MergedWithNext
			if pending != nil {
				out = append(out, *pending)
			}
			pc := p.piece
			pending = &pc
		default:
			if pending != nil {
				p.piece = piece{text: pending.text + p.text, first: pending.first}
				pending = nil
			}
			out = append(out, p.piece)
		}
	}
	if pending != nil {
		out = append(out, *pending)
	}
	return out
}

// byteLevelPre is the ByteLevel pre-tokenizer: an optional leading space,
// an optional GPT-2 split, then every byte mapped to its character.
func byteLevelPre(prefixSpace, useRegex bool) preTokenizer {
	split := splitBy(regexp2.MustCompile(gpt2Pattern, regexp2.None), "Isolated")
	return func(in []piece) ([]piece, error) {
		if prefixSpace {
			for i := range in {
				if in[i].first && !strings.HasPrefix(in[i].text, " ") {
					in[i].text = " " + in[i].text
				}
			}
		}
		if useRegex {
			var err error
			if in, err = split(in); err != nil {
				return nil, err
			}
		}
		for i := range in {
			in[i].text = byteLevel(in[i].text)
		}
		return in, nil
	}
}

// metaspace replaces spaces with the replacement character (▁), prepends
// one per the prepend scheme (always, first, never) and optionally splits
// before each replacement character.
func metaspace(p preTokenizerJSON) preTokenizer {
	repl := p.Replacement
	if repl == "" {
		repl = "▁"
	}
	scheme := p.PrependScheme
	if scheme == "" {
		scheme = "always"
		if !p.AddPrefixSpace {
			scheme = "never"
		}
	}
	split := p.Split == nil || *p.Split
	return func(in []piece) ([]piece, error) {
		var out []piece
		for _, pc := range in {
			s := strings.ReplaceAll(pc.text, " ", repl)
			if (scheme == "always" || (scheme == "first" && pc.first)) && !strings.HasPrefix(s, repl) {
				s = repl + s
			}
			if !split {
				out = append(out, piece{text: s, first: pc.first})
				continue
			}
			for i, part := range splitBefore(s, repl) {
				out = append(out, piece{text: part, first: pc.first && i == 0})
			}
		}
		return out, nil
	}
}

// splitBefore cuts s before every occurrence of sep except at its start,
// so each part but the first starts with sep.
func splitBefore(s, sep string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); {
		j := strings.Index(s[i:], sep)
		if j < 0 {
			break
		}
		out = append(out, s[start:i+j])
		start = i + j
		i = start + len(sep)
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
