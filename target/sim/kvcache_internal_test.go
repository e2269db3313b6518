package sim

import (
	"testing"
	"time"
)

// acquireHash acquires the block holding h, which is resident.
func acquireHash(p *blockPool, h uint64) int32 {
	id := p.lookup([]uint64{h}, 1, nil)[0]
	p.acquire(id)
	return id
}

// alloc1 allocates one block.
func alloc1(p *blockPool) int32 { return p.alloc(nil, 1)[0] }

func TestBlockPoolPrefixHitsAndLRUEviction(t *testing.T) {
	t.Parallel()
	p := newBlockPool(4)
	a, b := alloc1(p), alloc1(p)
	p.register(a, 100)
	p.register(b, 200)
	if p.nfree != 2 || len(p.lookup([]uint64{100, 200, 300}, 3, nil)) != 2 || len(p.lookup([]uint64{200}, 1, nil)) != 1 {
		t.Fatalf("after two registered blocks: nfree %d, hits wrong", p.nfree)
	}
	if len(p.lookup([]uint64{100, 200}, 1, nil)) != 1 {
		t.Fatal("hits must respect the limit")
	}
	// Free b then a: both stay cached on the free list, a most recent.
	p.release(b)
	p.release(a)
	if p.nfree != 4 || len(p.lookup([]uint64{100, 200}, 2, nil)) != 2 {
		t.Fatalf("freed blocks must stay cached: nfree %d", p.nfree)
	}
	// Reviving a cached free block takes it off the free list.
	if id := acquireHash(p, 100); id != a || p.nfree != 3 {
		t.Fatalf("acquire(100) = %d, nfree %d", id, p.nfree)
	}
	// Two never-used blocks go first, then the least recently freed cached one (b).
	alloc1(p)
	alloc1(p)
	if len(p.lookup([]uint64{200}, 1, nil)) != 1 {
		t.Fatal("evicted a cached block while never-used blocks were free")
	}
	if id := alloc1(p); id != b || len(p.lookup([]uint64{200}, 1, nil)) != 0 {
		t.Fatalf("alloc should evict b (LRU cached), got %d", id)
	}
	if p.nfree != 0 || p.usage() != 1 {
		t.Fatalf("pool should be full: nfree %d usage %v", p.nfree, p.usage())
	}
	// A block shared by two sequences returns to the free list only once both release it.
	p.release(a)
	if p.nfree != 1 {
		t.Fatalf("nfree %d after releasing a", p.nfree)
	}
	acquireHash(p, 100)
	acquireHash(p, 100)
	p.release(a)
	if p.nfree != 0 {
		t.Fatal("a block still referenced went back to the free list")
	}
}

func TestBlockHashesChainOverEarlierTokens(t *testing.T) {
	t.Parallel()
	mk := func(prompt []int) *seq {
		s := newSeq("x", prompt, sampling{key: 1}, 1, "length", time.Time{})
		s.ensureHashes(2, 2)
		return s
	}
	a := mk([]int{1, 2, 3, 4})
	b := mk([]int{9, 2, 3, 4})
	if a.hashes[1] == b.hashes[1] {
		t.Fatal("block 1 hashes equal although block 0 differs: the chain must cover earlier tokens")
	}
	if c := mk([]int{1, 2, 3, 4}); c.hashes[1] != a.hashes[1] {
		t.Fatal("equal prefixes must hash equally")
	}
}
