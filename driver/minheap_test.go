package driver

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestMinHeapPopsInOrder: pushes and pops interleaved at random pop the
// pending requests in (intended time, index) order, ties included.
func TestMinHeapPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h minHeap[pending]
	var want []pending
	for i := range 2000 {
		x := pending{index: i, intended: time.Duration(rng.IntN(50))}
		h.push(x)
		want = append(want, x)
		if rng.IntN(3) == 0 {
			slices.SortFunc(want, func(a, b pending) int {
				if a.before(b) {
					return -1
				}
				return 1
			})
			if got := h.pop(); got != want[0] {
				t.Fatalf("pop %d: got %+v, want %+v", i, got, want[0])
			}
			want = want[1:]
		}
	}
	for h.Len() > 0 {
		slices.SortFunc(want, func(a, b pending) int {
			if a.before(b) {
				return -1
			}
			return 1
		})
		if got := h.pop(); got != want[0] {
			t.Fatalf("drain: got %+v, want %+v", got, want[0])
		}
		want = want[1:]
	}
}
