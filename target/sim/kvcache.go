package sim

// blockPool is a paged KV cache with vLLM-style automatic prefix caching.
//
// Every block has a reference count. Blocks nobody references wait on one
// free queue in least-recently-freed order; a free block may still hold
// cached content (its hash is in the index) and can be revived by a
// prefix hit until allocation evicts it from the head of the queue.
// Blocks are identified by index, so the pool allocates nothing after
// construction.
//
// Under the virtual clock every prompt block is allocated, evicting
// content cached long ago whose index slot no CPU cache holds any more
// (eight ranks' pools and indexes outgrow a core's cache). Allocation
// therefore takes a sequence's blocks in one batch and first reads each
// block and its hash's slot in one branch-free pass, so those misses
// overlap instead of each stalling the branchy removal behind it.
type blockPool struct {
	blocks []block
	free   freeQueue
	nfree  int
	cache  blockIndex // content hash → block holding it
	// evicted, when set, receives the hash of each cached block that
	// allocation evicts (the CPU tier stores it).
	evicted func(hash uint64)
	// warmed sums the words warmAllocations reads. Nothing uses it: it
	// keeps the compiler from dropping loads made only for their cache
	// lines.
	warmed uint64
}

// block is 16 bytes, so four share a cache line.
type block struct {
	hash uint64
	// freedAt is the position of the block's latest entry on the free
	// queue, modulo 2^32: the entries standing in the queue at once span
	// at most its ring's length (< 2^32) of positions, so no two share it.
	freedAt uint32
	// state is the reference count times blockRef, plus blockCached
	// while hash is in the index.
	state uint32
}

const (
	blockCached = 1 // state bit: the block's hash is in the index
	blockRef    = 2 // state increment of one reference
)

// free reports whether nobody references the block.
func (b *block) free() bool { return b.state < blockRef }

// cached reports whether the block's content is in the index.
func (b *block) cached() bool { return b.state&blockCached != 0 }

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
		if p.blocks[id].free() {
			need++
		}
	}
	return need
}

// acquire takes a reference on cached block id (a free one's entry on
// the free queue goes stale).
func (p *blockPool) acquire(id int32) {
	b := &p.blocks[id]
	if b.free() {
		p.nfree--
	}
	b.state += blockRef
}

// alloc appends to ids the n least recently freed blocks, each with one
// reference, evicting their cached content in that order. The caller has
// checked nfree.
func (p *blockPool) alloc(ids []int32, n int) []int32 {
	if n > 1 {
		p.warmAllocations(n)
	}
	start := len(ids)
	for range n {
		id := p.free.pop(p.blocks)
		p.blocks[id].state += blockRef
		ids = append(ids, id)
	}
	p.nfree -= n
	for _, id := range ids[start:] {
		b := &p.blocks[id]
		if !b.cached() {
			continue
		}
		p.cache.remove(b.hash, id)
		b.state &^= blockCached
		if p.evicted != nil {
			p.evicted(b.hash)
		}
	}
	return ids
}

// warmAllocations reads, for the free queue's next n entries (stale
// ones included), each block and the index slot where its cached hash's
// probe starts: allocating n blocks pops and evicts them.
func (p *blockPool) warmAllocations(n int) {
	q := &p.free
	sum := p.warmed
	for pos := q.head; pos < min(q.head+uint64(n), q.tail); pos++ {
		sum += p.cache.slots[p.cache.home(tag(p.blocks[q.ring[pos&q.mask()]].hash))]
	}
	p.warmed = sum
}

// release drops one reference; an unreferenced block joins the tail of the
// free queue and keeps its cached content until evicted.
func (p *blockPool) release(id int32) {
	b := &p.blocks[id]
	b.state -= blockRef
	if b.free() {
		p.free.push(id, p.blocks)
		p.nfree++
	}
}

// releaseAll releases blocks tail first, so a sequence's last blocks
// are evicted before its shared prefix.
func (p *blockPool) releaseAll(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		p.release(blocks[i])
	}
}

// register records that block id now holds the content hashed h and
// reports whether the cache gained it. A hash that is already resident in
// another block keeps its first copy.
func (p *blockPool) register(id int32, h uint64) bool {
	b := &p.blocks[id]
	if b.cached() {
		return false
	}
	if !p.cache.add(h, id, p.blocks) {
		return false
	}
	b.hash = h
	b.state |= blockCached
	return true
}

// usage is the fraction of blocks referenced by running sequences.
func (p *blockPool) usage() float64 {
	if p.size() == 0 {
		return 0
	}
	return 1 - float64(p.nfree)/float64(p.size())
}
