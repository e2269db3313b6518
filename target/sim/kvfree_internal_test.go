package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lruModel is the pool's free order kept the plain way: a slice of free
// blocks, least recently freed first, a revived block cut out of it.
type lruModel struct {
	ref    []int
	free   []int32
	cached map[uint64]int32
	hash   map[int32]uint64
}

// The pool allocates the same blocks, evicts the same content and counts
// the same free blocks as the plain model, through allocations,
// releases, revivals by prefix hits and registrations, long enough for
// the free queue to compact many times.
func TestBlockPoolFreeOrderMatchesAPlainLRU(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 50} {
		rnd := rand.New(rand.NewPCG(uint64(n), 31))
		p := newBlockPool(n)
		m := lruModel{ref: make([]int, n), cached: map[uint64]int32{}, hash: map[int32]uint64{}}
		for i := range n {
			m.free = append(m.free, int32(i))
		}
		var held []int32 // one entry per reference
		for op := range 3000 * n {
			// Every other stretch allocates nothing: revivals and
			// releases then fill the free queue with stale entries.
			churn := op/(20*n)%2 == 1
			switch r := rnd.IntN(10); {
			case r < 3 && !churn && len(m.free) > 0:
				want := m.free[0]
				m.free = m.free[1:]
				if h, ok := m.hash[want]; ok {
					delete(m.cached, h)
					delete(m.hash, want)
				}
				m.ref[want] = 1
				if got := p.alloc(); got != want {
					t.Fatalf("n %d op %d: alloc %d, want %d", n, op, got, want)
				}
				held = append(held, want)
			case r < 6 && len(held) > 0:
				i := rnd.IntN(len(held))
				id := held[i]
				held = slices.Delete(held, i, i+1)
				if m.ref[id]--; m.ref[id] == 0 {
					m.free = append(m.free, id)
				}
				p.release(id)
			case r < 8 && len(m.cached) > 0:
				hs := make([]uint64, 0, len(m.cached))
				for h := range m.cached {
					hs = append(hs, h)
				}
				slices.Sort(hs)
				h := hs[rnd.IntN(len(hs))]
				id := m.cached[h]
				if m.ref[id] == 0 {
					m.free = slices.DeleteFunc(m.free, func(b int32) bool { return b == id })
				}
				m.ref[id]++
				if got := acquireHash(p, h); got != id {
					t.Fatalf("n %d op %d: acquire %d, want %d", n, op, got, id)
				}
				held = append(held, id)
			case len(held) > 0:
				id, h := held[rnd.IntN(len(held))], rnd.Uint64()%uint64(4*n)
				_, has := m.cached[h]
				_, holds := m.hash[id]
				if !has && !holds {
					m.cached[h], m.hash[id] = id, h
				}
				if got := p.register(id, h); got != (!has && !holds) {
					t.Fatalf("n %d op %d: register %v, want %v", n, op, got, !has && !holds)
				}
			}
			if p.nfree != len(m.free) {
				t.Fatalf("n %d op %d: %d free, want %d", n, op, p.nfree, len(m.free))
			}
		}
	}
}
