package sim

import "math/bits"

// blockIndex is the prefix cache's lookup: content hash → the block
// holding it. It is an open-addressing table with linear probing and
// backward-shift deletion, sized once for its pool: a block holds at most
// one hash, so the table is never more than half full, never grows and
// never accumulates tombstones. A Go map did this job at several times the
// cost under the virtual clock, where every freshly computed prompt block
// is an insert and its later eviction a delete (issue 30's trace-scale
// benchmark spent a quarter of its engine time in map probes).
//
// A slot is one word: the block id plus one in its low half (0: empty)
// and, in its high half, the high half of the key spread by an odd
// multiplier (a bijection, so any key set spreads, chained hashes or
// not). The high half fixes the home slot, so entries move without
// reading their keys, and a rank's index stays small enough to share the
// CPU cache with its blocks. A match of the high halves is confirmed
// against the block's own hash, which makes every lookup exact.
type blockIndex struct {
	slots []uint64
	mask  int
	shift uint // 64 − log2(len(slots)): a slot's home is its top bits
}

const (
	indexSpread = 0x9e3779b97f4a7c15 // odd: multiplying by it is a bijection
	indexTag    = ^uint64(0xffffffff)
)

// newBlockIndex is an empty index for a pool of blocks blocks.
func newBlockIndex(blocks int) blockIndex {
	size := 8
	for size < 2*blocks {
		size <<= 1
	}
	return blockIndex{slots: make([]uint64, size), mask: size - 1, shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

// tag is key's high half as the index keeps it.
func tag(key uint64) uint64 { return key * indexSpread & indexTag }

// home is the first slot of the entry whose slot (or tag) is s.
func (x *blockIndex) home(s uint64) int { return int(s >> x.shift) }

// slotID is the block an occupied slot names.
func slotID(s uint64) int32 { return int32(uint32(s)) - 1 }

// find is the slot holding key (blocks: the pool's, whose hashes confirm
// a tag match), or the empty slot that ends its probe and false.
func (x *blockIndex) find(key uint64, blocks []block) (int, bool) {
	t := tag(key)
	for i := x.home(t); ; i = (i + 1) & x.mask {
		s := x.slots[i]
		if s == 0 {
			return i, false
		}
		if s&indexTag == t && blocks[slotID(s)].hash == key {
			return i, true
		}
	}
}

// get is the block holding key.
func (x *blockIndex) get(key uint64, blocks []block) (int32, bool) {
	i, ok := x.find(key, blocks)
	return slotID(x.slots[i]), ok
}

// add records that block id holds key unless key is already present; it
// reports whether it added. The caller sets the block's hash to key.
func (x *blockIndex) add(key uint64, id int32, blocks []block) bool {
	i, ok := x.find(key, blocks)
	if ok {
		return false
	}
	x.slots[i] = tag(key) | uint64(uint32(id+1))
	return true
}

// remove deletes block id's entry for key, which must be present, and
// shifts back the entries probed past it so no lookup stops short.
func (x *blockIndex) remove(key uint64, id int32) {
	i := x.home(tag(key))
	for slotID(x.slots[i]) != id {
		i = (i + 1) & x.mask
	}
	for j := (i + 1) & x.mask; x.slots[j] != 0; j = (j + 1) & x.mask {
		// The entry at j may fill the hole at i when its home is not
		// cyclically within (i, j].
		if h := x.home(x.slots[j]); (j-h)&x.mask >= (j-i)&x.mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
}

// reset empties the index.
func (x *blockIndex) reset() { clear(x.slots) }
