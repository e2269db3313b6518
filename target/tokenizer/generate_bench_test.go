package tokenizer

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGenerateIDs draws a 512-token block (a trace's block) as text
// and ids, into ints and into two-byte ids: ns/op over 512 is the cost of
// one fresh prompt token on the virtual clock's token path.
func BenchmarkGenerateIDs(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	b.Run("int", func(b *testing.B) {
		for b.Loop() {
			GenerateIDs[int](r, 512, nil)
		}
	})
	b.Run("uint16", func(b *testing.B) {
		for b.Loop() {
			GenerateIDs[uint16](r, 512, nil)
		}
	})
}
