package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// spanLayouts draws prompts as spans the way the token path builds them:
// keyed spans from a shared pool (every occurrence of a Key the same ids,
// lengths not multiples of any block size), fresh Key 0 spans (some
// empty), one-id Key 0 chat role markers, and prompts that extend an
// earlier prompt's first spans (a conversation's next turn), so a keyed
// span recurs after the same prefix and after others.
type spanLayouts struct {
	rnd     *rand.Rand
	pool    []tokenizer.Span
	prompts [][]tokenizer.Span
}

func newSpanLayouts(seed uint64) *spanLayouts {
	l := &spanLayouts{rnd: rand.New(rand.NewPCG(seed, 30))}
	for k := range 48 {
		l.pool = append(l.pool, tokenizer.Span{IDs: l.ids(1 + l.rnd.IntN(80)), Key: uint64(k)*0x9e3779b97f4a7c15 + 1})
	}
	return l
}

func (l *spanLayouts) ids(n int) []uint16 {
	ids := make([]uint16, n)
	for i := range ids {
		ids[i] = uint16(l.rnd.IntN(tokenizer.VocabSize))
	}
	return ids
}

func (l *spanLayouts) marker() tokenizer.Span {
	return tokenizer.Span{IDs: []uint16{uint16(tokenizer.VocabSize + l.rnd.IntN(len(chatRoles)))}}
}

// next is a new prompt of at least one token.
func (l *spanLayouts) next() []tokenizer.Span {
	var p []tokenizer.Span
	if len(l.prompts) > 0 && l.rnd.IntN(2) == 0 {
		prev := l.prompts[l.rnd.IntN(len(l.prompts))]
		p = slices.Clone(prev[:l.rnd.IntN(len(prev)+1)])
	}
	for range 1 + l.rnd.IntN(8) {
		switch r := l.rnd.IntN(10); {
		case r < 6:
			p = append(p, l.pool[l.rnd.IntN(len(l.pool))])
		case r < 8:
			p = append(p, tokenizer.Span{IDs: l.ids(l.rnd.IntN(40))})
		default:
			p = append(p, l.marker())
		}
	}
	if tokenizer.SpansLen(p) == 0 {
		p = append(p, l.marker())
	}
	l.prompts = append(l.prompts, p)
	return p
}

func flatten(spans []tokenizer.Span) []int {
	flat := make([]int, 0, tokenizer.SpansLen(spans))
	for _, sp := range spans {
		for _, id := range sp.IDs {
			flat = append(flat, int(id))
		}
	}
	return flat
}

// A prompt hashed as spans through the memo gives the key and block
// hashes of the flat ids, bit for bit, at every block size, whether the
// memo is cold, holds the spans (in its newer or older generation) or has
// dropped them: one memo for all block sizes, as one fleet's workers may
// differ. Run long enough for the generations to turn over.
func TestHashSpansIsHashPromptOfTheFlatIDs(t *testing.T) {
	t.Parallel()
	l := newSpanLayouts(1)
	var m promptMemo
	const seed = 0xfeed
	// Where the memo holds each keyed span before it is hashed: in its
	// newer generation, its older one, or no longer (seen before).
	seen := map[memoKey]bool{}
	var newer, older, dropped int
	census := func(spans []tokenizer.Span, bs int) {
		c := startChains(seed)
		for _, sp := range spans {
			if k := (memoKey{before: c.key, span: sp.Key, blockSize: bs}); sp.Key != 0 {
				e, ok := m.entries[k]
				switch {
				case ok && e.gen == m.gen:
					newer++
				case ok:
					older++
				case seen[k]:
					dropped++
				}
				seen[k] = true
			}
			feed(&c, sp.IDs, bs, nil)
		}
	}
	check := func(spans []tokenizer.Span, bs int) {
		t.Helper()
		census(spans, bs)
		wantKey, wantHashes := hashPrompt(seed, flatten(spans), bs)
		key, hashes := hashSpans(seed, spans, bs, &m)
		if key != wantKey || !slices.Equal(hashes, wantHashes) {
			t.Fatalf("block size %d, spans %v: key %#x, hashes %x; flat ids: %#x, %x", bs, spanShape(spans), key, hashes, wantKey, wantHashes)
		}
	}
	for range 8000 {
		spans := l.next()
		for _, bs := range []int{0, 16, 32} {
			check(spans, bs)
			check(spans, bs)
		}
	}
	for _, spans := range l.prompts[:300] { // long dropped from the memo
		for _, bs := range []int{0, 16, 32} {
			check(spans, bs)
		}
	}
	if m.gen < 2 || newer == 0 || older == 0 || dropped == 0 {
		t.Errorf("the memo turned over %d times; keyed spans found in its newer generation %d times, its older %d, dropped %d: the test does not cover it", m.gen, newer, older, dropped)
	}
	if n, h := len(m.entries), len(m.arenas[0])+len(m.arenas[1]); n > 2*memoEntries || h > 2*memoHashes {
		t.Errorf("the memo holds %d entries and %d block hashes, more than two generations of %d and %d", n, h, memoEntries, memoHashes)
	}
	kept := 0
	for _, e := range m.entries {
		if e.gen == m.gen {
			kept += int(e.n)
		}
	}
	if a := len(m.arenas[m.gen%2]); a != kept {
		t.Errorf("the newer generation's arena holds %d block hashes, its entries %d", a, kept)
	}
}

// spanShape is spans' lengths and keys, for a failure message.
func spanShape(spans []tokenizer.Span) [][2]uint64 {
	var s [][2]uint64
	for _, sp := range spans {
		s = append(s, [2]uint64{uint64(sp.Len()), sp.Key})
	}
	return s
}

// A sequence reads a spans prompt's ids (ids: KV events, the block
// straddling the prompt's end) and extends its block chain as from the
// flat ids, over the prompt, across its end and into generated tokens.
func TestSeqReadsSpansAsTheFlatPrompt(t *testing.T) {
	t.Parallel()
	l := newSpanLayouts(2)
	rnd := rand.New(rand.NewPCG(2, 30))
	for range 200 {
		spans := l.next()
		flat := flatten(spans)
		samp := sampling{key: rnd.Uint64()}
		fs := newSeq("f", flat, samp, 64, "length", time.Time{})
		ss := newSeq("s", nil, samp, 64, "length", time.Time{})
		ss.spans, ss.promptLen = spans, len(flat)
		fs.publish(40, false)
		ss.publish(40, false)
		for range 8 {
			from := rnd.IntN(len(flat) + 40)
			to := from + rnd.IntN(len(flat)+40-from+1)
			if got, want := slices.Collect(ss.ids(from, to)), slices.Collect(fs.ids(from, to)); !slices.Equal(got, want) {
				t.Fatalf("spans %v: ids [%d, %d) %v, flat %v", spanShape(spans), from, to, got, want)
			}
		}
		bs := []int{1, 16, 32}[rnd.IntN(3)]
		n := (len(flat) + 40) / bs
		fs.ensureHashes(n, bs)
		ss.ensureHashes(n, bs)
		if !slices.Equal(ss.hashes, fs.hashes) {
			t.Fatalf("spans %v, block size %d: block hashes %x, flat %x", spanShape(spans), bs, ss.hashes, fs.hashes)
		}
		if _, want := hashPrompt(0, flat, bs); !slices.Equal(ss.hashes[:len(want)], want) {
			t.Fatalf("spans %v, block size %d: ensureHashes %x, hashPrompt %x", spanShape(spans), bs, ss.hashes, want)
		}
	}
}
