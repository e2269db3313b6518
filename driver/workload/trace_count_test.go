package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Under the sim tokenizer a trace item generated from its counts has
// input_length tokens, which its InputTokens then says without counting:
// full blocks, a last block cut short, text past the last hash id, one-token
// blocks and prompts of one token.
func TestTracePromptCountIsInputLength(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		ids := make([]string, 1+i%6)
		for k := range ids {
			ids[k] = fmt.Sprint((i*7 + k) % 23)
		}
		fmt.Fprintf(&b, `{"input_length": %d, "output_length": 2, "hash_ids": [%s]}`+"\n", 1+(i*37)%300, strings.Join(ids, ","))
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, block := range []int{1, 16, 64} {
		items, err := Build(Workload{Kind: Trace, Path: path, BlockSize: block}, 0, testSource(4), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			if n := tokenizer.Count(it.Prompt); n != it.InputTokens || n != 1+(i*37)%300 {
				t.Fatalf("block_size %d, item %d: the prompt has %d tokens, the item says %d, input_length %d", block, i, n, it.InputTokens, 1+(i*37)%300)
			}
		}
	}
}
