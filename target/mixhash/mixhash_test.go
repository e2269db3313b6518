package mixhash

import (
	"hash/fnv"
	"testing"
)

// FNV64a must equal the standard library's FNV-1a: the router's ring points
// were defined with hash/fnv, and moving to the allocation-free form must not
// move a single key.
func TestFNV64aMatchesStdlib(t *testing.T) {
	for _, s := range []string{"", "a", "http://127.0.0.1:8100:7", "body:{\"prompt\":\"hi\"}"} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(s))
		if got, want := FNV64a(s), h.Sum64(); got != want {
			t.Errorf("FNV64a(%q) = %#x, want %#x", s, got, want)
		}
	}
}

// Known splitmix64 finaliser outputs (the mix of 0 is 0; of 1 a fixed value),
// so an edit to the constants fails here rather than silently re-hashing
// every ring and sampler.
func TestMix64Known(t *testing.T) {
	if got := Mix64(0); got != 0 {
		t.Errorf("Mix64(0) = %#x, want 0", got)
	}
	if got, want := Mix64(1), uint64(0x5692161d100b05e5); got != want {
		t.Errorf("Mix64(1) = %#x, want %#x", got, want)
	}
	seen := map[uint64]bool{}
	for i := range uint64(1000) {
		seen[Mix64(i)>>54] = true // top 10 bits of consecutive inputs
	}
	if len(seen) < 400 {
		t.Errorf("consecutive inputs fill only %d of 1024 top-bit buckets", len(seen))
	}
}
