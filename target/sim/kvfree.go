package sim

// freeQueue is the pool's free blocks in the order they were freed: a
// ring of block ids, in which an entry stands while it is its block's
// latest (its position, modulo 2^32, is the block's freedAt) and the
// block is still unreferenced. Reviving a free block by a prefix hit
// leaves its entry behind, stale, where a doubly linked list would unlink
// it, and allocation skips stale entries. An allocation thus reads ids in sequence
// rather than chasing links through the block array, so the cache misses
// of consecutive allocations overlap, and a revival touches no neighbour:
// under the virtual clock every prompt block passes through here.
type freeQueue struct {
	ring []int32 // a power of two long
	// head and tail are absolute positions: the entries are
	// ring[p&(len(ring)-1)] for head <= p < tail.
	head, tail uint64
}

// newFreeQueue is an empty queue for a pool of n blocks: at least twice
// their number, so a full ring is at least half stale.
func newFreeQueue(n int) freeQueue {
	size := 2
	for size < 2*n {
		size <<= 1
	}
	return freeQueue{ring: make([]int32, size)}
}

func (q *freeQueue) mask() uint64 { return uint64(len(q.ring) - 1) }

// push appends block id, just freed.
func (q *freeQueue) push(id int32, blocks []block) {
	if q.tail-q.head == uint64(len(q.ring)) {
		q.compact(blocks)
	}
	blocks[id].freedAt = uint32(q.tail)
	q.ring[q.tail&q.mask()] = id
	q.tail++
}

// pop takes the least recently freed free block. The caller has checked
// that a block is free: each free block has one standing entry.
func (q *freeQueue) pop(blocks []block) int32 {
	for {
		p := q.head
		id := q.ring[p&q.mask()]
		q.head++
		if b := &blocks[id]; b.free() && b.freedAt == uint32(p) {
			return id
		}
	}
}

// compact drops the stale entries, keeping the order of the rest. A pool
// has at most half the ring free, so it frees half the ring at least.
func (q *freeQueue) compact(blocks []block) {
	w := q.head
	for r := q.head; r < q.tail; r++ {
		id := q.ring[r&q.mask()]
		if b := &blocks[id]; b.free() && b.freedAt == uint32(r) {
			q.ring[w&q.mask()] = id
			b.freedAt = uint32(w)
			w++
		}
	}
	q.tail = w
}
