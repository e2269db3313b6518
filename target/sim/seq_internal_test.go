package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/mixhash"
)

// hashPrompt's one pass gives the sampler key of a token-by-token chain
// from the seed and the block chain ensureHashes builds from the prompt,
// for prompts shorter than, equal to and longer than whole blocks.
func TestHashPromptMatchesTheChainsItFuses(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(30, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 64, 1000} {
		prompt := make([]int, n)
		for i := range prompt {
			prompt[i] = rnd.IntN(50_000)
		}
		const seed, bs = 0xfeed, 16
		want := uint64(seed)
		for _, id := range prompt {
			want = mixhash.Mix64(want ^ uint64(id)*0x9e3779b97f4a7c15)
		}
		key, hashes := hashPrompt(seed, prompt, bs)
		if key != want {
			t.Errorf("%d tokens: key %#x, want %#x", n, key, want)
		}
		if k, h := hashPrompt(seed, prompt, 0); k != want || h != nil {
			t.Errorf("%d tokens without blocks: key %#x, %d hashes; want %#x, none", n, k, len(h), want)
		}
		s := newSeq("x", prompt, sampling{key: key}, 1, "length", time.Time{})
		s.ensureHashes(n/bs, bs)
		if len(hashes) != n/bs {
			t.Fatalf("%d tokens: %d block hashes, want %d", n, len(hashes), n/bs)
		}
		for i, h := range s.hashes {
			if hashes[i] != h {
				t.Errorf("%d tokens: block %d hash %#x, ensureHashes %#x", n, i, hashes[i], h)
			}
		}
	}
}
