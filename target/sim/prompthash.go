package sim

import (
	"github.com/autoinfer/autoinfer/target/mixhash"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// chains is where a prompt's two hash chains stand after some of its
// tokens: the sampler's key (every token so far, chained from the model
// seed) and the block hash chain (the full blocks so far, then the fill
// tokens of the block under way chained onto the last full block's hash).
// The key identifies the whole prefix, so the block chain's state (and
// fill) follows from it for one block size: what the prompt memo relies on.
type chains struct {
	key  uint64
	h    uint64
	fill int
}

// startChains is the chains before a prompt's first token.
func startChains(seed uint64) chains { return chains{key: seed, h: chainRoot} }

// feed chains ids onto c and appends to hashes the hash of every block of
// blockSize that completes among them (no block chain when blockSize is
// 0: no prefix caching). The two chains are independent, so the CPU runs
// them side by side at about the cost of one. Generic so a flat prompt
// ([]int: HTTP, replay) and a span ([]uint16) share one loop.
func feed[T int | uint16](c *chains, ids []T, blockSize int, hashes []uint64) []uint64 {
	key := c.key
	if blockSize == 0 {
		for _, id := range ids {
			key = chainToken(key, int(id))
		}
		c.key = key
		return hashes
	}
	h := c.h
	for len(ids) > 0 {
		n := min(blockSize-c.fill, len(ids))
		for _, id := range ids[:n] {
			key, h = chainToken(key, int(id)), chainToken(h, int(id))
		}
		ids, c.fill = ids[n:], c.fill+n
		if c.fill == blockSize {
			hashes, c.fill = append(hashes, h), 0
		}
	}
	c.key, c.h = key, h
	return hashes
}

// blockHashes is an empty slice for the full blocks of n tokens (nil when
// blockSize is 0).
func blockHashes(n, blockSize int) []uint64 {
	if blockSize == 0 {
		return nil
	}
	return make([]uint64, 0, n/blockSize)
}

// hashPrompt is the sampler's key of prompt, chained onto seed, and the
// block hash chain of prompt's full blocks of blockSize tokens (none when
// blockSize is 0: no prefix caching), in one pass over the prompt: under
// the virtual clock a pass over every prompt token. A flat prompt is one
// span of its own (no memo).
func hashPrompt(seed uint64, prompt []int, blockSize int) (uint64, []uint64) {
	c := startChains(seed)
	hashes := feed(&c, prompt, blockSize, blockHashes(len(prompt), blockSize))
	return c.key, hashes
}

// hashSpans is hashPrompt of the ids spans hold, one after the other: a
// span with a Key is looked up in memo first, so a block of a trace that
// thousands of prompts repeat after the same prefix is hashed once.
func hashSpans(seed uint64, spans []tokenizer.Span, blockSize int, memo *promptMemo) (uint64, []uint64) {
	c := startChains(seed)
	hashes := blockHashes(tokenizer.SpansLen(spans), blockSize)
	for _, sp := range spans {
		switch {
		case sp.Blind > 0:
			hashes = feedBlind(&c, sp, blockSize, hashes)
		case sp.Key == 0:
			hashes = feed(&c, sp.IDs, blockSize, hashes)
		default:
			hashes = memo.feed(&c, sp, blockSize, hashes)
		}
	}
	return c.key, hashes
}

// feedBlind is feed of a blind span (tokenizer.Span.Blind: no ids, its
// Key names them), in O(blocks) rather than O(tokens): the span enters
// the key chain as one step (chainBlind of the whole span, so the
// sampler's key does not depend on the block size, as an id prompt's
// does not), and the block chain as one step per piece, the run of the
// span's tokens inside one block. A block's hash is the chain after its
// last piece, so a layout of spans gives the same block hashes wherever
// it stands against block boundaries, and whatever the block size,
// without a memo: a piece costs what a token of an id span costs.
func feedBlind(c *chains, sp tokenizer.Span, blockSize int, hashes []uint64) []uint64 {
	k := blindKey(sp.Key)
	c.key = chainBlind(c.key, k, 0, sp.Blind)
	if blockSize == 0 {
		return hashes
	}
	for a := 0; a < sp.Blind; {
		b := min(a+blockSize-c.fill, sp.Blind)
		c.h, c.fill = chainBlind(c.h, k, a, b), c.fill+b-a
		if c.fill == blockSize {
			hashes, c.fill = append(hashes, c.h), 0
		}
		a = b
	}
	return hashes
}

// chainRoot is the hash the first block's chain starts from.
const chainRoot = 0x6a09e667f3bcc908

// chainToken chains token id onto hash h.
func chainToken(h uint64, id int) uint64 {
	return mixhash.Mix64(h ^ uint64(id)*0x9e3779b97f4a7c15)
}

// blindKey is a blind span's Key as chainBlind takes it: mixed, so that
// Keys a driver numbers in sequence (1, 2, 3...) do not cancel against
// the piece offsets chainBlind folds into them.
func blindKey(key uint64) uint64 { return mixhash.Mix64(key ^ 0xb11d5ba5e0f5eed5) }

// chainBlind chains the piece [a, b) of the blind span of mixed key k
// (blindKey) onto hash h, as one step: h mixed with a hash of (k, a, b),
// which for one span differs for every piece (a and b fit in 32 bits, the
// mixer is a bijection) and across spans with different Keys w.h.p., as
// two token ids' blocks differ. The piece's hash does not depend on h, so
// the CPU computes it while the previous step finishes: a chain of pieces
// costs one mix per piece, as a chain of tokens one per token.
func chainBlind(h, k uint64, a, b int) uint64 {
	return mixhash.Mix64(h ^ mixhash.Mix64(k^uint64(a)<<32^uint64(b)))
}
