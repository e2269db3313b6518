package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// --header and --extra-body: any input gives a result or a usage error,
// never a panic; a parsed header splits at the first ':' or '='.
func FuzzBenchHeaderAndExtraBody(f *testing.F) {
	for _, s := range []string{"X-A:1", "X-B=2", "k:v=w", ":x", "", "a:", `{"top_k":5}`, `[]`, `null`, `{"a":{"b":[1,2]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders([]string{s})
		if err == nil {
			i := strings.IndexAny(s, ":=")
			if len(h) != 1 || h[strings.TrimSpace(s[:i])] == "" && strings.TrimSpace(s[i+1:]) != "" {
				t.Fatalf("parseHeaders(%q) = %v", s, h)
			}
		}
		extra, err := parseExtraBody(s)
		if err == nil {
			if extra == nil {
				t.Fatalf("parseExtraBody(%q) = nil without an error", s)
			}
			if _, err := json.Marshal(extra); err != nil {
				t.Fatalf("parseExtraBody(%q) gave what cannot be sent: %v", s, err)
			}
		}
	})
}
