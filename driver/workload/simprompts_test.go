package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// simPromptsText is the SHA-256 of the prompts TestSimPromptsNamesTheText
// draws, as SimPrompts draws them.
const simPromptsText = "66f5eb32898cdf3e1300d870970afd93b49945c07452d4e4c9dec6b8782a41f8"

// The request digests (driver bodySum) and the workload's identity take a
// generated prompt by its ids and shared blocks' keys with SimPrompts, not
// by its text: that stands for every byte only while SimPrompts changes
// whenever the drawn text does (the draw, the vocabulary, the spacing).
// This pins the text of a fixed draw (random with a shared prefix, a trace
// with shared hash_ids) to SimPrompts: a change to either fails here until
// both move together.
func TestSimPromptsNamesTheText(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"timestamp":0,"input_length":40,"output_length":3,"hash_ids":[1,2,3]}
{"timestamp":5,"input_length":37,"output_length":4,"hash_ids":[1,2,4]}
{"timestamp":9,"input_length":50,"output_length":2,"hash_ids":[1,5]}
`
	if err := os.WriteFile(trace, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, w := range []Workload{
		{Kind: Random, InputLen: 30, OutputLen: 5, PrefixLen: 12, RangeRatio: 0.5},
		{Kind: Trace, Path: trace, BlockSize: 16},
	} {
		items := Items(tokenItems(t, w))
		for i := range items.Len() {
			h.Write([]byte(items.At(i).Prompt))
			h.Write([]byte{0})
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != simPromptsText || SimPrompts != "sim/words-per-draw-5/key-first" {
		t.Fatalf("the drawn text's digest is %s with SimPrompts %q; pinned: %s with %q. A change to how prompts are drawn "+
			"must rename SimPrompts (older rows are then another workload) and re-pin both here",
			got, SimPrompts, simPromptsText, "sim/words-per-draw-5/key-first")
	}
}
