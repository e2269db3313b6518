package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lruModel is the pool's free order kept the plain way: a slice of free
// blocks, least recently freed first, a revived block cut out of it.
type lruModel struct {
	ref     []int
	free    []int32
	cached  map[uint64]int32
	hash    map[int32]uint64
	evicted []uint64 // hashes evicted, in order
}

// alloc takes the k least recently freed blocks, evicting their content
// in that order.
func (m *lruModel) alloc(k int) []int32 {
	ids := slices.Clone(m.free[:k])
	m.free = m.free[k:]
	for _, id := range ids {
		if h, ok := m.hash[id]; ok {
			delete(m.cached, h)
			delete(m.hash, id)
			m.evicted = append(m.evicted, h)
		}
		m.ref[id] = 1
	}
	return ids
}

func (m *lruModel) release(id int32) {
	if m.ref[id]--; m.ref[id] == 0 {
		m.free = append(m.free, id)
	}
}

// rebase moves p's free queue on by off positions, a multiple of its
// ring's length, as if that many blocks had been freed before.
func rebase(p *blockPool, off uint64) {
	q := &p.free
	q.head += off
	q.tail += off
	for i := range p.blocks {
		p.blocks[i].freedAt += uint32(off)
	}
}

// The pool allocates the same blocks, evicts the same content in the same
// order and counts the same free blocks as the plain model, through
// batched allocations, single and sequence-wide (tail-first) releases,
// revivals by prefix hits and registrations, long enough for the free
// queue to compact many times; also when its positions pass 2^32, where
// the blocks' freedAt wraps.
func TestBlockPoolFreeOrderMatchesAPlainLRU(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		wrap bool
	}{{1, false}, {3, false}, {50, false}, {3, true}, {50, true}} {
		n := c.n
		rnd := rand.New(rand.NewPCG(uint64(n), 31))
		p := newBlockPool(n)
		if c.wrap {
			rebase(p, 1<<32-uint64(len(p.free.ring))*8)
		}
		var evicted []uint64
		p.evicted = func(h uint64) { evicted = append(evicted, h) }
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
				k := 1 + rnd.IntN(min(len(m.free), 5))
				want := m.alloc(k)
				got := p.alloc(nil, k)
				if !slices.Equal(got, want) {
					t.Fatalf("n %d op %d: alloc %v, want %v", n, op, got, want)
				}
				held = append(held, want...)
			case r < 5 && len(held) > 0:
				i := rnd.IntN(len(held))
				id := held[i]
				held = slices.Delete(held, i, i+1)
				m.release(id)
				p.release(id)
			case r < 6 && len(held) > 0:
				// A sequence's blocks: releaseAll frees them last first.
				i := rnd.IntN(len(held))
				j := i + 1 + rnd.IntN(len(held)-i)
				seq := slices.Clone(held[i:j])
				held = slices.Delete(held, i, j)
				for k := len(seq) - 1; k >= 0; k-- {
					m.release(seq[k])
				}
				p.releaseAll(seq)
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
			if !slices.Equal(evicted, m.evicted) {
				t.Fatalf("n %d op %d: evicted %v, want %v", n, op, evicted, m.evicted)
			}
		}
		if len(evicted) < 20*n {
			t.Fatalf("n %d: only %d evictions: the sequence exercises too little", n, len(evicted))
		}
		if c.wrap && p.free.head < 1<<32 {
			t.Fatalf("n %d: the free queue stopped at %d, short of wrapping freedAt", n, p.free.head)
		}
	}
}
