package tokenizer

import (
	"math/rand/v2"
	"strings"
)

// Generate returns natural-looking text of exactly n tokens drawn from the
// vocabulary's words with r. The same r state gives the same text.
// Sentences end with a period every 8–20 words, which keeps real BPE
// tokenizers close to the same count.
func Generate(r *rand.Rand, n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n * 6)
	untilStop := 8 + r.IntN(13)
	for i := 0; i < n; i++ {
		// A period is its own token: place one only when a word follows it
		// would not be required, i.e. it still counts towards n.
		if untilStop == 0 && i > 0 && i < n-1 {
			b.WriteByte('.')
			untilStop = 8 + r.IntN(13)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[FirstWord+r.IntN(len(vocabulary)-FirstWord)])
		untilStop--
	}
	return b.String()
}
