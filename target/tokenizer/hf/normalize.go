package hf

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a segment of input text before pre-tokenization.
type normalizer func(string) (string, error)

// pattern is the {"String": …} or {"Regex": …} of Split and Replace.
type pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// compile returns a regexp2 matcher; a String pattern matches literally.
func (p pattern) compile(where string) (*regexp2.Regexp, error) {
	var expr string
	switch {
	case p.Regex != nil:
		expr = *p.Regex
	case p.String != nil:
		expr = regexp2.Escape(*p.String)
	default:
		return nil, fmt.Errorf("%s.pattern: want String or Regex", where)
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%s.pattern: %w", where, err)
	}
	return re, nil
}

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Prepend     string            `json:"prepend"`
	Pattern     pattern           `json:"pattern"`
	Content     string            `json:"content"`
	Left        bool              `json:"left"`
	Right       bool              `json:"right"`
}

// newNormalizers flattens a normalizer (null, one, or a Sequence) into a
// list applied in order.
func newNormalizers(raw json.RawMessage, where string) ([]normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n normalizerJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	switch n.Type {
	case "Sequence":
		var out []normalizer
		for i, r := range n.Normalizers {
			sub, err := newNormalizers(r, fmt.Sprintf("%s.normalizers[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	case "NFC":
		return []normalizer{plain(norm.NFC.String)}, nil
	case "NFD":
		return []normalizer{plain(norm.NFD.String)}, nil
	case "NFKC":
		return []normalizer{plain(norm.NFKC.String)}, nil
	case "NFKD":
		return []normalizer{plain(norm.NFKD.String)}, nil
	case "Lowercase":
		return []normalizer{plain(strings.ToLower)}, nil
	case "Strip":
		return []normalizer{plain(func(s string) string {
			if n.Left {
				s = strings.TrimLeft(s, whitespace)
			}
			if n.Right {
				s = strings.TrimRight(s, whitespace)
			}
			return s
		})}, nil
	case "Prepend":
		// The library prepends to every non-empty segment.
		return []normalizer{plain(func(s string) string {
			if s == "" {
				return s
			}
			return n.Prepend + s
		})}, nil
	case "Replace":
		re, err := n.Pattern.compile(where)
		if err != nil {
			return nil, err
		}
		// Content is literal: ReplaceFunc keeps regexp2 from reading "$".
		return []normalizer{func(s string) (string, error) {
			return re.ReplaceFunc(s, func(regexp2.Match) string { return n.Content }, -1, -1)
		}}, nil
	}
	return nil, fmt.Errorf("%s.type: normalizer %q is not supported", where, n.Type)
}

func plain(f func(string) string) normalizer {
	return func(s string) (string, error) { return f(s), nil }
}

// whitespace is what the library's Strip normalizer trims.
const whitespace = " \t\n\v\f\r\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
