package sim

// blockPool is a paged KV cache with vLLM-style automatic prefix caching.
//
// Every block has a reference count. Blocks nobody references wait on one
// free queue in least-recently-freed order; a free block may still hold
// cached content (its hash is in the index) and can be revived by a
// prefix hit until allocation evicts it from the head of the queue.
// Blocks are identified by index, so the pool allocates nothing after
// construction.
type blockPool struct {
	blocks []block
	free   freeQueue
	nfree  int
	cache  blockIndex // content hash → block holding it
	// evicted, when set, receives the hash of each cached block that
	// allocation evicts (the CPU tier stores it).
	evicted func(hash uint64)
}

type block struct {
	hash    uint64
	freedAt uint64 // position of its latest entry on the free queue
	ref     int32
	cached  bool
}

func newBlockPool(n int) *blockPool {
	p := &blockPool{blocks: make([]block, n), free: newFreeQueue(n), cache: newBlockIndex(n)}
	for i := range n {
		p.free.push(int32(i), p.blocks)
	}
	p.nfree = n
	return p
}

func (p *blockPool) size() int { return len(p.blocks) }

// lookup appends to ids the blocks holding the leading hashes that are
// resident, at most limit of them: an admission's prefix hit, looked up
// once for counting, checking the free blocks it needs and acquiring.
func (p *blockPool) lookup(hashes []uint64, limit int, ids []int32) []int32 {
	for _, h := range hashes[:min(limit, len(hashes))] {
		id, ok := p.cache.get(h, p.blocks)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// freeNeeded is how many free blocks an allocation of fresh blocks plus
// the cached blocks hit would consume.
func (p *blockPool) freeNeeded(hit []int32, fresh int) int {
	need := fresh
	for _, id := range hit {
		if p.blocks[id].ref == 0 {
			need++
		}
	}
	return need
}

// acquire takes a reference on cached block id (a free one's entry on
// the free queue goes stale).
func (p *blockPool) acquire(id int32) {
	if p.blocks[id].ref == 0 {
		p.nfree--
	}
	p.blocks[id].ref++
}

// alloc takes the least recently freed block, evicting its cached content.
// The caller has checked nfree.
func (p *blockPool) alloc() int32 {
	id := p.free.pop(p.blocks)
	p.nfree--
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
// free queue and keeps its cached content until evicted.
func (p *blockPool) release(id int32) {
	b := &p.blocks[id]
	b.ref--
	if b.ref == 0 {
		p.free.push(id, p.blocks)
		p.nfree++
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
