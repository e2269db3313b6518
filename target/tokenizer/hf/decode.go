package hf

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns tokens back into text; a nil decoder concatenates.
type decoder []func([]string) []string

type decoderJSON struct {
	Type          string            `json:"type"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       pattern           `json:"pattern"`
	Content       string            `json:"content"`
	Start         int               `json:"start"`
	Stop          int               `json:"stop"`
	Replacement   string            `json:"replacement"`
	PrependScheme string            `json:"prepend_scheme"`
	AddPrefix     *bool             `json:"add_prefix_space"`
}

func newDecoder(raw json.RawMessage) (decoder, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var d decoderJSON
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch d.Type {
	case "Sequence":
		var out decoder
		for _, r := range d.Decoders {
			sub, err := newDecoder(r)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	case "ByteLevel":
		return decoder{decodeByteLevel}, nil
	case "ByteFallback":
		return decoder{decodeByteFallback}, nil
	case "Fuse":
		return decoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Replace":
		if d.Pattern.String == nil {
			return nil, fmt.Errorf("decoder: Replace with a regex is not supported")
		}
		from := *d.Pattern.String
		return decoder{func(toks []string) []string {
			for i := range toks {
				toks[i] = strings.ReplaceAll(toks[i], from, d.Content)
			}
			return toks
		}}, nil
	case "Strip":
		return decoder{func(toks []string) []string {
			for i, tok := range toks {
				for k := 0; k < d.Start && strings.HasPrefix(tok, d.Content); k++ {
					tok = tok[len(d.Content):]
				}
				for k := 0; k < d.Stop && strings.HasSuffix(tok, d.Content); k++ {
					tok = tok[:len(tok)-len(d.Content)]
				}
				toks[i] = tok
			}
			return toks
		}}, nil
	case "Metaspace":
		repl := d.Replacement
		if repl == "" {
			repl = "▁"
		}
		strip := d.PrependScheme != "never" && (d.AddPrefix == nil || *d.AddPrefix)
		return decoder{func(toks []string) []string {
			for i := range toks {
				toks[i] = strings.ReplaceAll(toks[i], repl, " ")
				if i == 0 && strip {
					toks[i] = strings.TrimPrefix(toks[i], " ")
				}
			}
			return toks
		}}, nil
	}
	return nil, fmt.Errorf("decoder.type: %q is not supported", d.Type)
}

// decodeByteLevel maps each token's characters back to bytes; invalid
// UTF-8 becomes U+FFFD as the library's lossy conversion does.
func decodeByteLevel(toks []string) []string {
	var b []byte
	for _, tok := range toks {
		for _, r := range tok {
			if c, ok := runeToByte[r]; ok {
				b = append(b, c)
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
	}
	return []string{strings.ToValidUTF8(string(b), "\uFFFD")}
}

// decodeByteFallback turns runs of <0xNN> tokens into text; a run that is
// not valid UTF-8 becomes one U+FFFD per byte, as the library does.
func decodeByteFallback(toks []string) []string {
	var out []string
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, tok := range toks {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
			if v, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				run = append(run, byte(v))
				continue
			}
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// Decode returns the text of ids; ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(t.model.tokens) && t.model.tokens[id] != "" {
			toks = append(toks, t.model.tokens[id])
		}
	}
	for _, step := range t.decoder {
		toks = step(toks)
	}
	return strings.Join(toks, "")
}
