package sim

import "github.com/autoinfer/autoinfer/target/tokenizer"

// Bounds of one generation of a promptMemo. An entry costs its map slot
// (a 24-byte key, a 40-byte value and the map's overhead: about 80 bytes)
// and 8 bytes per block hash it keeps, so a memo holds at most
// 2 × (memoEntries × 80 + memoHashes × 8) bytes, about 6.8 MB (under
// 10 MB with the map's and the slices' growth slack). A Mooncake-scale
// trace's 512-token block at the default 16-token blocks keeps 32
// hashes, so a generation holds 8,192 such spans: minutes of the trace's
// arrivals: it finds 37.4 % of that trace's full blocks, an unbounded
// memo 38.7 % (docs/sim.md).
const (
	memoEntries = 1 << 14
	memoHashes  = 1 << 18
)

// promptMemo keeps what hashing a keyed span did, by where the prompt's
// chains stood before it: the block hashes that completed inside the span
// and the chains after it. The key chain before a span identifies the
// whole prefix (it chains every earlier token from the model seed), so an
// entry holds whatever the span's alignment to blocks, and a span is
// hashed token by token once per prefix and block size rather than once
// per prompt. One per Fleet: its engines run on the caller's goroutine.
//
// Two generations bound it (as the driver's trace block cache): an entry
// of the older one found moves to the newer one, and when the newer one
// is full the older one is dropped and the newer becomes the older, so
// spans that live conversations keep repeating survive. Both live in one
// map, each entry tagged with its generation, so a span costs one lookup
// (most spans of a trace are new: a second map would be a second cache
// miss for each); the map drops the dead generation's entries as the
// generations turn over.
type promptMemo struct {
	entries map[memoKey]memoEntry
	// arenas hold generation g's block hashes in arenas[g%2], end to end.
	arenas [2][]uint64
	gen    int // the newer generation
	fresh  int // entries the newer generation holds
}

// memoKey names an entry: the key chain before the span, the span's Key
// and the block size (0: no block chain).
type memoKey struct {
	before, span uint64
	blockSize    int
}

// memoEntry is the chains after the span, its generation and where its
// completed block hashes lie in that generation's arena.
type memoEntry struct {
	after  chains
	off, n int32
	gen    int
}

// feed is the package's feed of span's ids onto c: taken from the memo
// when it holds the span at c, else hashed and kept.
func (m *promptMemo) feed(c *chains, sp tokenizer.Span, blockSize int, hashes []uint64) []uint64 {
	k := memoKey{before: c.key, span: sp.Key, blockSize: blockSize}
	n := len(hashes)
	if e, ok := m.entries[k]; ok {
		*c = e.after
		hashes = append(hashes, m.arenas[e.gen%2][e.off:e.off+e.n]...)
		if e.gen == m.gen {
			return hashes
		}
	} else {
		hashes = feed(c, sp.IDs, blockSize, hashes)
	}
	m.put(k, *c, hashes[n:])
	return hashes
}

// put keeps an entry in the newer generation, turning the generations
// over first when it is full.
func (m *promptMemo) put(k memoKey, after chains, hashes []uint64) {
	if len(hashes) > memoHashes {
		return // a span longer than a generation is not kept
	}
	if m.entries == nil {
		m.entries = make(map[memoKey]memoEntry)
	}
	if m.fresh >= memoEntries || len(m.arenas[m.gen%2])+len(hashes) > memoHashes {
		m.turn()
	}
	a := &m.arenas[m.gen%2]
	m.entries[k] = memoEntry{after: after, off: int32(len(*a)), n: int32(len(hashes)), gen: m.gen}
	*a = append(*a, hashes...)
	m.fresh++
}

// turn makes the newer generation the older and starts an empty one in
// the arena of the one it drops, whose entries leave the map.
func (m *promptMemo) turn() {
	m.gen++
	m.arenas[m.gen%2], m.fresh = m.arenas[m.gen%2][:0], 0
	for k, e := range m.entries {
		if e.gen < m.gen-1 {
			delete(m.entries, k)
		}
	}
}
