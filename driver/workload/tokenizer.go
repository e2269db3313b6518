package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/target/tokenizer"
	"github.com/autoinfer/autoinfer/target/tokenizer/hf"
	"github.com/autoinfer/autoinfer/trials/field"
)

// SimTokenizerID names the simulated engine's tokenizer, the default.
const SimTokenizerID = "autoinfer/sim"

// Tokenizer generates prompts of a given token count and counts tokens.
// Implementations are safe for concurrent use.
type Tokenizer interface {
	// ID names the tokenizer in results (tokenizer_id).
	ID() string
	// Count returns the number of tokens of text, no special tokens added.
	Count(text string) int
	// Generate returns a prompt of n tokens drawn with r. The sim
	// tokenizer's count is exact; a real tokenizer's is exact unless
	// vllm's re-encode loop did not converge, which Count of the text
	// then shows.
	Generate(r *rand.Rand, n int) string
}

// SimPrompts names how the sim tokenizer draws prompt text
// (tokenizer.GenerateIDs: five words from each 64-bit draw; a shared
// part's text after its key, generator.shared). A trial's workload
// identity carries it (Workload.PromptDraw), so a row whose prompts were
// drawn another way (one draw per word, or shared text before its key,
// before) is another workload rather than byte-identical traffic under
// the same hash. The request digests carry it too (driver bodySum).
const SimPrompts = "sim/words-per-draw-5/key-first"

// PromptDraw is how w's prompts are drawn, for its identity: SimPrompts
// with the sim tokenizer, "" with a Hugging Face one (its prompts follow
// vllm's random dataset, unchanged).
func (w Workload) PromptDraw() string {
	if w.Tokenizer == "" || w.Tokenizer == SimTokenizerID {
		return SimPrompts
	}
	return ""
}

// Sim is the simulated engine's tokenizer.
type Sim struct{}

// ID is SimTokenizerID.
func (Sim) ID() string { return SimTokenizerID }

// Count counts with the shared sim tokenizer.
func (Sim) Count(text string) int { return tokenizer.Count(text) }

// Generate returns vocabulary words, exactly n tokens: the text
// tokenizer.GenerateIDs draws, so a prompt drawn with its ids (the
// virtual clock's token path) and one drawn as text alone are the same
// prompt.
func (Sim) Generate(r *rand.Rand, n int) string {
	text, _ := tokenizer.GenerateIDs[uint16](r, n, nil)
	return text
}

// HF is a Hugging Face tokenizer.json.
type HF struct {
	id       string
	tok      *hf.Tokenizer
	ordinary []int // ids a prompt may be drawn from
}

// ID is the name or path it was loaded by.
func (h *HF) ID() string { return h.id }

// Count encodes text without special tokens.
func (h *HF) Count(text string) int { return h.tok.Count(text) }

// maxRetry is vllm's max_retry of gen_prompt_decode_to_target_len.
const maxRetry = 10

// Generate follows vllm bench serve's random dataset: n consecutive
// ordinary token ids from a random offset, decoded to text; then, up to
// maxRetry times, the text is re-encoded and the ids trimmed to n or
// padded with random ordinary ids, and decoded again, until the text
// encodes to exactly n tokens (decode/encode is not a bijection: bytes
// merge across a boundary or split into several tokens).
func (h *HF) Generate(r *rand.Rand, n int) string {
	if n <= 0 {
		return ""
	}
	v := len(h.ordinary)
	offset := r.IntN(v)
	ids := make([]int, n)
	for j := range ids {
		ids[j] = h.ordinary[(offset+j)%v]
	}
	var text string
	for try := 0; ; try++ {
		text = h.tok.Decode(ids)
		ids = h.tok.Encode(text)
		if len(ids) == n || try == maxRetry {
			return text
		}
		if len(ids) > n {
			ids = ids[:n]
			continue
		}
		for len(ids) < n {
			ids = append(ids, h.ordinary[r.IntN(v)])
		}
	}
}

// LoadTokenizer returns the tokenizer name names: "" or autoinfer/sim for
// the sim tokenizer; a tokenizer.json file; a directory holding one; or a
// Hugging Face model name (org/model) found in the local Hugging Face
// cache ($HF_HOME/hub, default ~/.cache/huggingface/hub). Nothing is
// downloaded.
func LoadTokenizer(name string) (Tokenizer, error) {
	if name == "" || name == SimTokenizerID {
		return Sim{}, nil
	}
	path, err := resolveTokenizer(name)
	if err != nil {
		return nil, field.Errorf("tokenizer", "%v", err)
	}
	t, err := hf.Load(path)
	if err != nil {
		return nil, field.Errorf("tokenizer", "%v", err)
	}
	h := &HF{id: name, tok: t, ordinary: t.Ordinary()}
	if len(h.ordinary) == 0 {
		return nil, field.Errorf("tokenizer", "%s has no ordinary tokens", path)
	}
	return h, nil
}

func resolveTokenizer(name string) (string, error) {
	if st, err := os.Stat(name); err == nil {
		if !st.IsDir() {
			return name, nil
		}
		p := filepath.Join(name, "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: directory has no tokenizer.json", name)
		}
		return p, nil
	}
	if strings.Count(name, "/") != 1 || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%q: no such file or directory", name)
	}
	hub := filepath.Join(os.Getenv("HF_HOME"), "hub")
	if os.Getenv("HF_HOME") == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q: finding the Hugging Face cache: %w", name, err)
		}
		hub = filepath.Join(home, ".cache", "huggingface", "hub")
	}
	snaps := filepath.Join(hub, "models--"+strings.ReplaceAll(name, "/", "--"), "snapshots")
	matches, _ := filepath.Glob(filepath.Join(snaps, "*", "tokenizer.json"))
	if len(matches) == 0 {
		return "", errors.New(name + ": not a file or directory, and not in the Hugging Face cache (" + snaps +
			"); autoinfer does not download: fetch it with `huggingface-cli download " + name + " tokenizer.json` or pass the file's path")
	}
	slices.Sort(matches)
	return matches[len(matches)-1], nil
}
