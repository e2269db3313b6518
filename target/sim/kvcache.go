package sim

// blockPool is a paged KV cache with vLLM-style automatic prefix caching.
//
// Every block has a reference count. Blocks nobody references sit on one
// free list in least-recently-freed order; a free block may still hold
// cached content (its hash is in the cache map) and can be revived by a
// prefix hit until allocation evicts it from the head of the list. Blocks are
// identified by index; the list links are indices too, so the pool allocates
// nothing after construction.
type blockPool struct {
	blocks []block
	// head is the sentinel of the circular free list, at index len(blocks)-1.
	head  int32
	nfree int
	cache blockIndex // content hash → block holding it
	// evicted, when set, receives the hash of each cached block that
	// allocation evicts (the CPU tier stores it).
	evicted func(hash uint64)
}

type block struct {
	hash       uint64
	ref        int32
	prev, next int32
	cached     bool
}

func newBlockPool(n int) *blockPool {
	p := &blockPool{blocks: make([]block, n+1), head: int32(n), cache: newBlockIndex(n)}
	s := &p.blocks[p.head]
	s.prev, s.next = p.head, p.head
	for i := range n {
		p.pushTail(int32(i))
	}
	return p
}

func (p *blockPool) size() int { return len(p.blocks) - 1 }

func (p *blockPool) pushTail(id int32) {
	s := &p.blocks[p.head]
	b := &p.blocks[id]
	b.prev, b.next = s.prev, p.head
	p.blocks[s.prev].next = id
	s.prev = id
	p.nfree++
}

func (p *blockPool) unlink(id int32) {
	b := &p.blocks[id]
	p.blocks[b.prev].next = b.next
	p.blocks[b.next].prev = b.prev
	b.prev, b.next = -1, -1
	p.nfree--
}

// hits returns how many leading hashes are resident, at most limit.
func (p *blockPool) hits(hashes []uint64, limit int) int {
	n := 0
	for n < len(hashes) && n < limit {
		if _, ok := p.cache.get(hashes[n], p.blocks); !ok {
			break
		}
		n++
	}
	return n
}

// freeNeeded is how many free-list blocks an allocation of fresh blocks
// plus the first hit cached blocks would consume.
func (p *blockPool) freeNeeded(hashes []uint64, hit, fresh int) int {
	need := fresh
	for _, h := range hashes[:hit] {
		if id, _ := p.cache.get(h, p.blocks); p.blocks[id].ref == 0 {
			need++
		}
	}
	return need
}

// acquire takes a reference on the cached block holding hash h.
func (p *blockPool) acquire(h uint64) int32 {
	id, _ := p.cache.get(h, p.blocks)
	if p.blocks[id].ref == 0 {
		p.unlink(id)
	}
	p.blocks[id].ref++
	return id
}

// alloc takes the least recently freed block, evicting its cached content.
// The caller has checked nfree.
func (p *blockPool) alloc() int32 {
	id := p.blocks[p.head].next
	p.unlink(id)
	b := &p.blocks[id]
	if b.cached {
		p.cache.remove(b.hash, id)
		b.cached = false
		if p.evicted != nil {
			p.evicted(b.hash)
		}
	}
	b.ref = 1
	return id
}

// release drops one reference; an unreferenced block joins the tail of the
// free list and keeps its cached content until evicted.
func (p *blockPool) release(id int32) {
	b := &p.blocks[id]
	b.ref--
	if b.ref == 0 {
		p.pushTail(id)
	}
}

// register records that block id now holds the content hashed h and
// reports whether the cache gained it. A hash that is already resident in
// another block keeps its first copy.
func (p *blockPool) register(id int32, h uint64) bool {
	b := &p.blocks[id]
	if b.cached {
		return false
	}
	if !p.cache.add(h, id, p.blocks) {
		return false
	}
	b.hash, b.cached = h, true
	return true
}

// usage is the fraction of blocks referenced by running sequences.
func (p *blockPool) usage() float64 {
	if p.size() == 0 {
		return 0
	}
	return 1 - float64(p.nfree)/float64(p.size())
}
