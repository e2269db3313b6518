package sim

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"
)

// The fleet's typed push and pop keep container/heap's order: interleaved
// pushes and pops of events with tied times come out in the same (time,
// key) order from both.
func TestEventsPushPopMatchContainerHeap(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(30, 3))
	var typed, ref events
	key := 0
	for op := range 5000 {
		if len(typed) == 0 || rnd.IntN(3) > 0 {
			e := event{at: fleetBase.Add(time.Duration(rnd.IntN(20)) * time.Millisecond), key: key}
			key++
			typed.push(e)
			heap.Push(&ref, e)
			continue
		}
		got, want := typed.pop(), heap.Pop(&ref).(event)
		if got != want {
			t.Fatalf("op %d: pop %v, container/heap %v", op, got, want)
		}
	}
}
