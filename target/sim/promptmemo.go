package sim

import "github.com/autoinfer/autoinfer/target/tokenizer"

// Bounds of one generation of a promptMemo. An entry costs its map slot
// (a 24-byte key, a 32-byte value and the map's overhead: about 70 bytes)
// and 8 bytes per block hash it keeps, so a memo holds at most
// 2 × (memoEntries × 70 + memoHashes × 8) bytes, about 6.5 MB (under
// 10 MB with the map's and the slice's growth slack). A Mooncake-scale
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
// found in the older one moves to the newer one, and when the newer one
// is full the older one is emptied and becomes the newer, so spans that
// live conversations keep repeating survive.
type promptMemo struct {
	cur, old memoGen
}

// memoKey names an entry: the key chain before the span, the span's Key
// and the block size (0: no block chain).
type memoKey struct {
	before, span uint64
	blockSize    int
}

// memoEntry is the chains after the span and where its completed block
// hashes lie in its generation's arena.
type memoEntry struct {
	after  chains
	off, n int32
}

// memoGen is one generation: its entries and the block hashes they keep,
// end to end in one slice.
type memoGen struct {
	entries map[memoKey]memoEntry
	arena   []uint64
}

// feed is the package's feed of span's ids onto c: taken from the memo
// when it holds the span at c, else hashed and kept.
func (m *promptMemo) feed(c *chains, sp tokenizer.Span, blockSize int, hashes []uint64) []uint64 {
	k := memoKey{before: c.key, span: sp.Key, blockSize: blockSize}
	if e, ok := m.cur.entries[k]; ok {
		*c = e.after
		return append(hashes, m.cur.arena[e.off:e.off+e.n]...)
	}
	n := len(hashes)
	if e, ok := m.old.entries[k]; ok {
		*c = e.after
		hashes = append(hashes, m.old.arena[e.off:e.off+e.n]...)
		delete(m.old.entries, k)
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
	if len(m.cur.entries) >= memoEntries || len(m.cur.arena)+len(hashes) > memoHashes {
		m.old, m.cur = m.cur, m.old
		clear(m.cur.entries)
		m.cur.arena = m.cur.arena[:0]
	}
	if m.cur.entries == nil {
		m.cur.entries = make(map[memoKey]memoEntry)
	}
	m.cur.entries[k] = memoEntry{after: after, off: int32(len(m.cur.arena)), n: int32(len(hashes))}
	m.cur.arena = append(m.cur.arena, hashes...)
}
