package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUniquePrefixesShareNoPrefix: with unique_prefixes, shared_prefix,
// random and trace requests keep their lengths but no two share the text
// that the plain workload shares.
func TestUniquePrefixesShareNoPrefix(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(trace, []byte(strings.Repeat(`{"input_length": 40, "output_length": 4, "hash_ids": [1, 2]}`+"\n", 6)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		w      Workload
		prefix func(Item) string // the part the plain workload shares
	}{
		{"shared_prefix", Workload{Kind: SharedPrefix, NumGroups: 2, PromptsPerGroup: 3, SystemPromptLen: 32, QuestionLen: 8},
			func(it Item) string { return it.System }},
		{"random", Workload{Kind: Random, InputLen: 8, OutputLen: 4, PrefixLen: 32},
			func(it Item) string { return strings.Join(strings.Fields(it.Prompt)[:4], " ") }},
		{"trace", Workload{Kind: Trace, Path: trace, BlockSize: 16, IgnoreTimestamps: true},
			func(it Item) string { return strings.Join(strings.Fields(it.Prompt)[:4], " ") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, err := Build(c.w.WithDefaults(), 6, testSource(3), nil)
			if err != nil {
				t.Fatal(err)
			}
			u := c.w
			u.UniquePrefixes = true
			if err := u.Validate(); err != nil {
				t.Fatal(err)
			}
			unique, err := Build(u.WithDefaults(), 6, testSource(3), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(unique) != len(plain) {
				t.Fatalf("%d unique items, %d plain", len(unique), len(plain))
			}
			seenPlain, seen := map[string]bool{}, map[string]int{}
			for i := range plain {
				if plain[i].InputTokens != unique[i].InputTokens || plain[i].OutputTokens != unique[i].OutputTokens {
					t.Errorf("item %d: lengths %d/%d unique, %d/%d plain", i, unique[i].InputTokens, unique[i].OutputTokens, plain[i].InputTokens, plain[i].OutputTokens)
				}
				seenPlain[c.prefix(plain[i])] = true
				if j, ok := seen[c.prefix(unique[i])]; ok {
					t.Errorf("items %d and %d share a prefix under unique_prefixes", j, i)
				}
				seen[c.prefix(unique[i])] = i
			}
			if len(seenPlain) == len(plain) {
				t.Fatalf("the plain workload shares no prefix either: the test proves nothing")
			}
		})
	}
}

func TestUniquePrefixesRefusedWithoutPrefix(t *testing.T) {
	for _, w := range []Workload{
		{Kind: Random, InputLen: 8, UniquePrefixes: true},
		{Kind: ShareGPT, Path: "x.json", UniquePrefixes: true},
	} {
		err := w.Validate()
		if err == nil || !strings.Contains(err.Error(), "unique_prefixes") {
			t.Errorf("%s: got %v, want an error naming unique_prefixes", w.Kind, err)
		}
	}
}
