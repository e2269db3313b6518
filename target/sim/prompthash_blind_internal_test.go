package sim

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// units is what a prompt's tokens are, one 16-byte unit each (an id:
// its value; a blind span's token: its span's Key and offset) then its
// generated ids: a blind span's Key names its ids, so two prompts hold the
// same tokens exactly where their units agree.
func units(spans []tokenizer.Span, generated []int) []byte {
	var u []byte
	unit := func(key uint64, v int) {
		u = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(u, key), uint64(v))
	}
	for _, sp := range spans {
		for _, id := range sp.IDs {
			unit(0, int(id))
		}
		for a := range sp.Blind {
			unit(sp.Key, a)
		}
	}
	for _, id := range generated {
		unit(0, id)
	}
	return u
}

// identities interns what the hashes stand for: a block (the block before
// it and its units) or a whole prompt, each a number; bijective checks
// that hashes and identities map one to one.
type identities struct {
	ids    map[string]int
	hash   map[int]uint64
	byHash map[uint64]int
	again  int // identities asked for again: blocks or prompts shared
}

func newIdentities() *identities {
	return &identities{ids: map[string]int{}, hash: map[int]uint64{}, byHash: map[uint64]int{}}
}

func (x *identities) of(prev int, u []byte) int {
	k := string(binary.LittleEndian.AppendUint64(slices.Clip(u), uint64(prev)))
	id, ok := x.ids[k]
	if ok {
		x.again++
	} else {
		id = len(x.ids) + 1
		x.ids[k] = id
	}
	return id
}

// bijective reports whether hash h stands for identity id and no other,
// and id for h and no other.
func (x *identities) bijective(id int, h uint64) bool {
	if was, ok := x.hash[id]; ok && was != h {
		return false
	}
	if was, ok := x.byHash[h]; ok && was != id {
		return false
	}
	x.hash[id], x.byHash[h] = h, id
	return true
}

// Blind spans enter both chains by Key, not ids, in pieces: over random
// layouts of blind spans (lengths not multiples of a block, after one-id
// role markers that shift them by one token, after id spans, some empty)
// two block hashes are equal exactly when the blocks hold the same tokens
// after the same tokens (the same units), and two sampler keys exactly
// when the prompts do, at block sizes 1, 16 and 32 (0: the key alone);
// a sequence extends the chain from scratch across the prompt's end into
// its generated tokens with the same hashes, piece by piece.
func TestBlindSpansHashByIdentity(t *testing.T) {
	t.Parallel()
	l := newSpanLayouts(3)
	var m promptMemo
	const seed, gen = 0xfeed, 40
	keys := newIdentities()
	blocks := map[int]*identities{1: newIdentities(), 16: newIdentities(), 32: newIdentities()}
	for range 1500 {
		spans := blinded(l.next())
		n := tokenizer.SpansLen(spans)
		for _, bs := range []int{0, 1, 16, 32} {
			key, hashes := hashSpans(seed, spans, bs, &m)
			if !keys.bijective(keys.of(0, units(spans, nil)), key) {
				t.Fatalf("spans %v: sampler key %#x stands for other tokens too", spanShape(spans), key)
			}
			if bs == 0 {
				continue
			}
			if len(hashes) != n/bs {
				t.Fatalf("spans %v, block size %d: %d block hashes, want %d", spanShape(spans), bs, len(hashes), n/bs)
			}
			sq := newSeq("s", nil, sampling{key: key}, gen, "length", time.Time{})
			sq.spans, sq.promptLen = spans, n
			sq.publish(gen, false)
			sq.ensureHashes((n+gen)/bs, bs)
			if !slices.Equal(sq.hashes[:len(hashes)], hashes) {
				t.Fatalf("spans %v, block size %d: ensureHashes %x, hashSpans %x", spanShape(spans), bs, sq.hashes, hashes)
			}
			var g []int
			for p := range gen {
				g = append(g, sq.samp.token(p))
			}
			u, id := units(spans, g), 0
			for i, h := range sq.hashes {
				if id = blocks[bs].of(id, u[i*bs*16:(i+1)*bs*16]); !blocks[bs].bijective(id, h) {
					t.Fatalf("spans %v, block size %d: block %d's hash %#x stands for other tokens too", spanShape(spans), bs, i, h)
				}
			}
		}
	}
	for bs, x := range blocks {
		if x.again == 0 || len(x.hash) == 0 {
			t.Errorf("block size %d: %d distinct blocks, %d shared: the test does not cover prefix hits", bs, len(x.hash), x.again)
		}
	}
	if len(keys.hash) < 1000 {
		t.Errorf("%d distinct prompts: the test does not cover the layouts", len(keys.hash))
	}
}

// Changing one blind span's Key changes the sampler key and every block
// hash from the block holding the span's first token on, and none before.
func TestBlindSpanKeyChangesItsBlocks(t *testing.T) {
	t.Parallel()
	l := newSpanLayouts(4)
	rnd := rand.New(rand.NewPCG(4, 30))
	for range 300 {
		spans := blinded(l.next())
		var at []int // blind spans
		for i, sp := range spans {
			if sp.Blind > 0 {
				at = append(at, i)
			}
		}
		if len(at) == 0 {
			continue
		}
		i := at[rnd.IntN(len(at))]
		other := slices.Clone(spans)
		other[i].Key = rnd.Uint64() | 1
		start := tokenizer.SpansLen(spans[:i])
		for _, bs := range []int{0, 1, 16, 32} {
			k, h := hashSpans(0, spans, bs, nil)
			ko, ho := hashSpans(0, other, bs, nil)
			if k == ko {
				t.Fatalf("spans %v: Key %#x for %#x left the sampler key as it was", spanShape(spans), other[i].Key, spans[i].Key)
			}
			for b := range h {
				if same := h[b] == ho[b]; same != (b < start/max(bs, 1)) {
					t.Fatalf("spans %v, block size %d: span %d (tokens from %d) with another Key: block %d's hash equal %v", spanShape(spans), bs, i, start, b, same)
				}
			}
		}
	}
}
