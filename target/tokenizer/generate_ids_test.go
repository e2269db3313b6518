package tokenizer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// GenerateIDs appends the ids its text tokenizes to, exactly n of them,
// and the same r gives the same prompt: the virtual clock's token path and
// the HTTP path then give an engine the same prompt.
func TestGenerateIDsAreTheTextsTokens(t *testing.T) {
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
		if again, _ := GenerateIDs[int](rand.New(rand.NewPCG(seed, 7)), n, nil); again != text {
			t.Fatalf("seed %d, n %d: the same seed drew %.40q…, then %.40q…", seed, n, text, again)
		}
		if got := Tokenize(text); len(ids) != n || !slices.Equal(ids, got) && len(ids)+len(got) > 0 {
			t.Fatalf("seed %d, n %d: %d ids, differing from Tokenize(text) (%d ids)", seed, n, len(ids), len(got))
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

// Every word a draw gives, first to last (wordsPerDraw of them), is
// uniform over the vocabulary's words, and sentences run 8 to 20 words.
// The bound is the chi-square statistic's mean plus eight standard
// deviations (382 degrees of freedom); a draw that never reaches the last
// word, or a remainder that loses bits between words, exceeds it.
func TestGenerateIDsDrawsWordsUniformly(t *testing.T) {
	words := len(vocabulary) - FirstWord
	counts := make([][]int, wordsPerDraw)
	for k := range counts {
		counts[k] = make([]int, words)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 400 {
		_, ids := GenerateIDs[uint16](r, 5000, nil)
		w, run := 0, 0
		for j, id := range ids {
			if id == period {
				if run < 8 || run > 20 {
					t.Fatalf("a sentence of %d words ends at token %d", run, j)
				}
				run = 0
				continue
			}
			counts[w%wordsPerDraw][int(id)-FirstWord]++
			w, run = w+1, run+1
		}
	}
	df := float64(words - 1)
	for k, c := range counts {
		total := 0
		for _, n := range c {
			total += n
		}
		want, chi2 := float64(total)/float64(words), 0.0
		for _, n := range c {
			chi2 += (float64(n) - want) * (float64(n) - want) / want
		}
		if bound := df + 8*math.Sqrt(2*df); chi2 > bound {
			t.Fatalf("word %d of a draw: chi-square %.0f over %d words, bound %.0f", k+1, chi2, words, bound)
		}
	}
}
