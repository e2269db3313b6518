package tokenizer

import (
	"math/rand/v2"
	"strings"
)

// period is the id of ".", the sentence end Generate places.
const period = 1

// GenerateIDs is Generate's text as token ids, and the text itself: the same
// draws from r, so the text is Generate(r, n) and the ids are
// Tokenize(text) without tokenizing it. The virtual clock hands a
// simulated engine these ids instead of a body it would parse and
// tokenize again.
func GenerateIDs(r *rand.Rand, n int) (string, []int) {
	if n <= 0 {
		return "", nil
	}
	var b strings.Builder
	b.Grow(n * 6)
	ids := make([]int, n)
	untilStop := 8 + r.IntN(13)
	for i := range n {
		if untilStop == 0 && i > 0 && i < n-1 {
			b.WriteByte('.')
			ids[i] = period
			untilStop = 8 + r.IntN(13)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		id := FirstWord + r.IntN(len(vocabulary)-FirstWord)
		b.WriteString(vocabulary[id])
		ids[i] = id
		untilStop--
	}
	return b.String(), ids
}
