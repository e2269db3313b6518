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
		ti := tokenItems(t, w)
		items := Items(ti)
		for i := range items.Len() {
			it, spans := ti.AtTokens(i)
			ids := flat(spans)
			if want := items.At(i); it != want {
				t.Fatalf("%s item %d: AtTokens' item %+v, At's %+v", w.Kind, i, it, want)
			}
			if want := tokenizer.Tokenize(it.Prompt); !slices.Equal(ids, want) || len(ids) != it.InputTokens {
				t.Fatalf("%s item %d: %d ids (input_tokens %d), the prompt tokenizes to %d", w.Kind, i, len(ids), it.InputTokens, len(want))
			}
			pit, pspans, parts := ti.AtParts(i, false)
			pids := flat(pspans)
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

// tokenItems builds w's items with the sim tokenizer: six of random, the
// whole trace.
func tokenItems(t *testing.T, w Workload) TokenItems {
	t.Helper()
	n := 6
	if w.Kind == Trace {
		n = 0
	}
	items, err := BuildItems(w, n, testSource(3), Sim{})
	if err != nil {
		t.Fatal(err)
	}
	return items.(TokenItems)
}

// flat is spans' ids in order.
func flat(spans []tokenizer.Span) []int {
	ids := []int{}
	for _, s := range spans {
		for _, id := range s.IDs {
			ids = append(ids, int(id))
		}
	}
	return ids
}

// Two trace lines holding a hash id hold its block's one span: the same
// ids (one backing array, not a copy per prompt) under the same nonzero
// Key, whether the block was cached or drawn again after its eviction;
// different hash ids give different keys, and a partial block or a tail
// is its line's own (Key 0). A random workload's prefix is one keyed span
// shared by every prompt, the bodies their own.
func TestSharedBlocksAreOneSpan(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"timestamp":0,"input_length":40,"output_length":3,"hash_ids":[1,2,3]}
{"timestamp":5,"input_length":37,"output_length":4,"hash_ids":[1,2,4]}
{"timestamp":9,"input_length":50,"output_length":2,"hash_ids":[2,5]}
`
	if err := os.WriteFile(trace, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	items, err := BuildItems(Workload{Kind: Trace, Path: trace, BlockSize: 16}, 0, testSource(3), Sim{})
	if err != nil {
		t.Fatal(err)
	}
	ti := items.(TokenItems)
	_, a := ti.AtTokens(0) // blocks 1, 2, then 8 tokens of block 3 (its own)
	_, b := ti.AtTokens(1) // blocks 1, 2, then 5 tokens of block 4
	_, c := ti.AtTokens(2) // blocks 2, 5, then an 18-token tail
	if len(a) != 3 || len(b) != 3 || len(c) != 3 {
		t.Fatalf("%d, %d and %d spans, want 3 each", len(a), len(b), len(c))
	}
	same := func(x, y tokenizer.Span) bool {
		return &x.IDs[0] == &y.IDs[0] && len(x.IDs) == len(y.IDs) && x.Key == y.Key
	}
	if !same(a[0], b[0]) || !same(a[1], b[1]) || !same(a[1], c[0]) || a[0].Key == 0 || a[1].Key == 0 {
		t.Fatalf("blocks 1 and 2 are not one keyed span in every line: %v", [][]tokenizer.Span{a, b, c})
	}
	if a[0].Key == a[1].Key || c[1].Key == 0 || c[1].Key == a[0].Key || c[1].Key == a[1].Key {
		t.Fatalf("hash ids 1, 2 and 5 have keys %d, %d and %d: want distinct", a[0].Key, a[1].Key, c[1].Key)
	}
	if a[2].Key != 0 || b[2].Key != 0 || c[2].Key != 0 || len(a[2].IDs) != 8 || len(c[2].IDs) != 18 {
		t.Fatalf("partial blocks and tails: %v %v %v, want their lines' own (Key 0)", a[2], b[2], c[2])
	}

	// Another build of the same source draws block 2 again: equal ids
	// under the same key, the contract a memo keyed by Key relies on.
	again, err := BuildItems(Workload{Kind: Trace, Path: trace, BlockSize: 16}, 0, testSource(3), Sim{})
	if err != nil {
		t.Fatal(err)
	}
	_, d := again.(TokenItems).AtTokens(2)
	if d[0].Key != a[1].Key || &d[0].IDs[0] == &a[1].IDs[0] || !slices.Equal(d[0].IDs, a[1].IDs) {
		t.Fatalf("block 2 drawn again: key %d (was %d), ids equal %v", d[0].Key, a[1].Key, slices.Equal(d[0].IDs, a[1].IDs))
	}
	// Another source's block 2 is other ids: another key.
	other, err := BuildItems(Workload{Kind: Trace, Path: trace, BlockSize: 16}, 0, testSource(4), Sim{})
	if err != nil {
		t.Fatal(err)
	}
	if _, e := other.(TokenItems).AtTokens(2); e[0].Key == a[1].Key || slices.Equal(e[0].IDs, a[1].IDs) {
		t.Fatalf("block 2 of another source: key %d, ids equal %v; want other ids under another key", e[0].Key, slices.Equal(e[0].IDs, a[1].IDs))
	}

	random, err := BuildItems(Workload{Kind: Random, InputLen: 30, OutputLen: 5, PrefixLen: 12}, 3, testSource(3), Sim{})
	if err != nil {
		t.Fatal(err)
	}
	_, p := random.(TokenItems).AtTokens(0)
	_, q := random.(TokenItems).AtTokens(1)
	if len(p) != 2 || len(q) != 2 || !same(p[0], q[0]) || p[0].Key == 0 || len(p[0].IDs) != 12 || p[1].Key != 0 || q[1].Key != 0 {
		t.Fatalf("random prompts' spans %v and %v: want the 12-token prefix's one keyed span, then each prompt's own", p, q)
	}
}

// A blind prompt is the drawn one with every shared part named, not drawn:
// the same item and span lengths, a full trace block or random's shared
// prefix as {Key, Blind} under the drawn span's own Key, every other span
// (a partial block, a tail, a body) drawn as it is. Asked first or after
// the drawn prompt, so whatever the block cache holds.
func TestBlindPartsNameTheDrawnSpans(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"timestamp":0,"input_length":40,"output_length":3,"hash_ids":[1,2,3]}
{"timestamp":5,"input_length":37,"output_length":4,"hash_ids":[1,2,4]}
{"timestamp":9,"input_length":50,"output_length":2,"hash_ids":[1,5]}
`
	if err := os.WriteFile(trace, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range []Workload{
		{Kind: Random, InputLen: 30, OutputLen: 5, PrefixLen: 12, RangeRatio: 0.5},
		{Kind: Trace, Path: trace, BlockSize: 16},
	} {
		for _, blindFirst := range []bool{true, false} {
			ti := tokenItems(t, w)
			blinds := 0
			for i := range ti.Len() {
				var bit, it Item
				var bspans, spans []tokenizer.Span
				if blindFirst {
					bit, bspans, _ = ti.AtParts(i, true)
					it, spans, _ = ti.AtParts(i, false)
				} else {
					it, spans, _ = ti.AtParts(i, false)
					bit, bspans, _ = ti.AtParts(i, true)
				}
				if bit != it || len(bspans) != len(spans) {
					t.Fatalf("%s item %d: blind item %+v (%d spans), drawn %+v (%d)", w.Kind, i, bit, len(bspans), it, len(spans))
				}
				for k, s := range spans {
					b := bspans[k]
					switch {
					case s.Key != 0 && (b.Key != s.Key || b.Blind != len(s.IDs) || b.IDs != nil):
						t.Fatalf("%s item %d span %d: blind %+v, drawn key %d of %d ids", w.Kind, i, k, b, s.Key, len(s.IDs))
					case s.Key == 0 && (b.Blind != 0 || !slices.Equal(b.IDs, s.IDs)):
						t.Fatalf("%s item %d span %d: an own span came blind or changed", w.Kind, i, k)
					}
					if b.Blind != 0 {
						blinds++
					}
				}
			}
			if blinds == 0 {
				t.Fatalf("%s: no span came blind", w.Kind)
			}
		}
	}
}
