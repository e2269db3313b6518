package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// GenerateIDs gives Generate's text from the same draws, and appends the
// ids that text tokenizes to: the virtual clock's token path and the HTTP path then
// give an engine the same prompt.
func TestGenerateIDsIsTokenizedGenerate(t *testing.T) {
	for seed := range uint64(200) {
		n := int(seed*37%700) + int(seed%3)
		var before []int // a third of the calls append to ids already there
		if seed%3 == 1 {
			before = []int{-1, -2}
		}
		text, ids := GenerateIDs(rand.New(rand.NewPCG(seed, 7)), n, before)
		if len(before) > 0 {
			if !slices.Equal(ids[:2], []int{-1, -2}) {
				t.Fatalf("seed %d, n %d: ids begin %v, want the ids appended to [-1 -2]", seed, n, ids[:min(2, len(ids))])
			}
			ids = ids[2:]
		}
		want := Generate(rand.New(rand.NewPCG(seed, 7)), n)
		if text != want {
			t.Fatalf("seed %d, n %d: text %.40q…, Generate gives %.40q…", seed, n, text, want)
		}
		if got := Tokenize(want); !slices.Equal(ids, got) && len(ids)+len(got) > 0 {
			t.Fatalf("seed %d, n %d: ids differ from Tokenize(Generate) (%d vs %d ids)", seed, n, len(ids), len(got))
		}
	}
}

// GenerateIDs into two-byte ids draws what it draws into ints: the same
// text and the same ids, appended after what the slice held.
func TestGenerateIDsUint16IsGenerateIDs(t *testing.T) {
	for seed := range uint64(100) {
		n := int(seed*53%1100) + int(seed%2)
		before := []uint16{}
		if seed%2 == 1 {
			before = []uint16{9, 8}
		}
		text16, ids16 := GenerateIDs(rand.New(rand.NewPCG(seed, 11)), n, before)
		text, ids := GenerateIDs[int](rand.New(rand.NewPCG(seed, 11)), n, nil)
		if text16 != text || len(ids16) != len(before)+len(ids) || !slices.Equal(ids16[:len(before)], before) {
			t.Fatalf("seed %d, n %d: text equal %v, %d ids after %v, want %d after it", seed, n, text16 == text, len(ids16), before, len(ids))
		}
		for j, id := range ids {
			if int(ids16[len(before)+j]) != id {
				t.Fatalf("seed %d, n %d: id %d is %d, GenerateIDs[int] gives %d", seed, n, j, ids16[len(before)+j], id)
			}
		}
	}
}
