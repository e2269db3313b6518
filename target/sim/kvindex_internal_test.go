package sim

import (
	"math/rand/v2"
	"testing"
)

// The index answers as a Go map does under the pool's use: a block holds
// at most one key; adds of absent and present keys, removes, lookups and
// resets, up to a full pool. Keys come from a small set, a quarter of them
// small integers and a quarter sharing another key's tag, so probe
// chains collide, tags match without keys matching, and backward shifts
// run across the table's wrap-around.
func TestBlockIndexAgreesWithAMap(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 5, 64, 1000} {
		rnd := rand.New(rand.NewPCG(uint64(n), 30))
		x, ref := newBlockIndex(n), map[uint64]int32{}
		blocks := make([]block, n)
		held := make([]bool, n)
		// inv·indexSpread = 1, so k+inv spreads to k's spread plus one:
		// the same tag for a different key.
		inv := uint64(indexSpread)
		for range 5 {
			inv *= 2 - indexSpread*inv
		}
		keys := make([]uint64, 3*n)
		for i := range keys {
			switch i % 4 {
			case 0:
				keys[i] = uint64(i)
			case 1:
				keys[i] = keys[i-1] + inv
			default:
				keys[i] = rnd.Uint64()
			}
		}
		for op := range 200 * n {
			k, id := keys[rnd.IntN(len(keys))], int32(rnd.IntN(n))
			switch r := rnd.IntN(10); {
			case r < 4 && !held[id]:
				_, had := ref[k]
				if got := x.add(k, id, blocks); got != !had {
					t.Fatalf("n %d op %d: add(%#x) = %v, want %v", n, op, k, got, !had)
				}
				if !had {
					ref[k], held[id], blocks[id].hash = id, true, k
				}
			case r < 7:
				if b, ok := ref[k]; ok {
					x.remove(k, b)
					delete(ref, k)
					held[b] = false
				}
			case r == 9 && rnd.IntN(200) == 0:
				x.reset()
				clear(ref)
				clear(held)
			}
			check := keys
			if op%n != 0 {
				check = []uint64{k, keys[rnd.IntN(len(keys))]}
			}
			for _, k := range check {
				want, wantOK := ref[k]
				if got, ok := x.get(k, blocks); ok != wantOK || (ok && got != want) {
					t.Fatalf("n %d op %d: get(%#x) = %d %v, want %d %v", n, op, k, got, ok, want, wantOK)
				}
			}
		}
	}
}
