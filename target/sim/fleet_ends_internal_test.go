package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The step-end heap pops in (time, rank) order: interleaved pushes and
// pops of ends with tied times come out as the least of a plain list.
func TestStepEndsPopInTimeThenRankOrder(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(30, 3))
	var h stepEnds
	var ref []stepEnd
	for op := range 5000 {
		if len(ref) == 0 || rnd.IntN(3) > 0 {
			e := stepEnd{at: time.Duration(rnd.IntN(20)) * time.Millisecond, rank: rnd.IntN(64)}
			h.push(e)
			ref = append(ref, e)
			continue
		}
		i := 0
		for j, e := range ref {
			if e.at < ref[i].at || (e.at == ref[i].at && e.rank < ref[i].rank) {
				i = j
			}
		}
		want := ref[i]
		ref = slices.Delete(ref, i, i+1)
		if got := h.pop(); got != want {
			t.Fatalf("op %d: pop %v, want %v", op, got, want)
		}
	}
}
