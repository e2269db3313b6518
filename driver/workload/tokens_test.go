package workload

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// A random or trace item's ids are its prompt's under the sim tokenizer,
// and drawing them changes no byte of the item: the virtual clock's token
// path gives an engine the prompt the HTTP path would. AtParts gives the
// same ids and the prompt as parts that Join to it (a verbatim trace
// prompt whole, in the item).
func TestAtTokensAreTheTokenizedPrompt(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"timestamp":0,"input_length":40,"output_length":3,"hash_ids":[1,2,3]}
{"timestamp":5,"input_length":37,"output_length":4,"hash_ids":[1,2,4]}
{"timestamp":9,"input_length":50,"output_length":2,"hash_ids":[1,5]}
{"timestamp":9,"prompt":"hello there, friend","output_length":2}
`
	if err := os.WriteFile(trace, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range []Workload{
		{Kind: Random, InputLen: 30, OutputLen: 5, PrefixLen: 12, RangeRatio: 0.5},
		{Kind: Random, InputLen: 30, OutputLen: 5, PrefixLen: 12, UniquePrefixes: true},
		{Kind: Trace, Path: trace, BlockSize: 16},
	} {
		n := 6
		if w.Kind == Trace {
			n = 0
		}
		items, err := BuildItems(w, n, testSource(3), Sim{})
		if err != nil {
			t.Fatal(err)
		}
		ti := items.(TokenItems)
		for i := range items.Len() {
			it, ids := ti.AtTokens(i)
			if want := items.At(i); it != want {
				t.Fatalf("%s item %d: AtTokens' item %+v, At's %+v", w.Kind, i, it, want)
			}
			if want := tokenizer.Tokenize(it.Prompt); !slices.Equal(ids, want) || len(ids) != it.InputTokens {
				t.Fatalf("%s item %d: %d ids (input_tokens %d), the prompt tokenizes to %d", w.Kind, i, len(ids), it.InputTokens, len(want))
			}
			pit, pids, parts := ti.AtParts(i)
			if parts != nil {
				if pit.Prompt != "" {
					t.Fatalf("%s item %d: AtParts gave parts and a prompt", w.Kind, i)
				}
				pit.Prompt = Join(parts)
			}
			if pit != it || !slices.Equal(pids, ids) || (parts == nil) != (w.Kind == Trace && i == 3) {
				t.Fatalf("%s item %d: AtParts' item %+v (%d parts), ids equal %v; AtTokens' %+v", w.Kind, i, pit, len(parts), slices.Equal(pids, ids), it)
			}
		}
	}
}
