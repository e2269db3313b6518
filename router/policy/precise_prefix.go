package policy

import (
	"container/list"
	"sync"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// approxCap bounds the block keys precise_prefix remembers per target for
// its approximate fall-back (least recently routed dropped first): 64k
// blocks of 16 tokens cover a million prompt tokens per worker.
const approxCap = 1 << 16

// precisePrefix routes on the prefix blocks each worker really holds, as
// its KV events report them (BlockIndex), instead of guessing from the
// requests it was sent.
//
// Rule: the load gate is cache_aware's (imbalanced in-flight counts send
// to the least loaded). Otherwise the prompt is tokenized (the simulator's
// tokenizer), cut into full blocks chained like the engine's, and each
// candidate's score is the number of leading blocks its cache holds, up to
// the blocks an engine may reuse (it always recomputes the last prompt
// token). When the best score's share of the prompt is strictly above
// CacheThreshold the least-loaded candidate with that score wins, else the
// least-loaded candidate. A candidate whose event stream lost messages for
// good is scored approximately, from the blocks the router itself sent it
// (as cache_aware does), until its cache is known again; such picks are
// counted. The decision carries the predicted cached tokens.
type precisePrefix struct {
	p        Params
	idx      *BlockIndex
	tokenize func(string) []int

	mu     sync.Mutex
	approx map[string]*routedBlocks
	stats  PreciseStats
}

// PreciseStats counts precise_prefix's picks by how the chosen worker was
// scored.
type PreciseStats struct {
	Precise     uint64 // from the worker's KV events
	Approximate uint64 // stale event stream: from the router's own record
}

// routedBlocks is an LRU set of the block keys the router sent a target.
type routedBlocks struct {
	lru *list.List // of uint64, most recent at the front
	at  map[uint64]*list.Element
}

var (
	_ Policy    = (*precisePrefix)(nil)
	_ Needer    = (*precisePrefix)(nil)
	_ Forgetter = (*precisePrefix)(nil)
)

func newPrecisePrefix(p Params) *precisePrefix {
	idx := p.Blocks
	if idx == nil {
		idx = NewBlockIndex()
	}
	return &precisePrefix{p: p, idx: idx, tokenize: tokenizer.Tokenize, approx: map[string]*routedBlocks{}}
}

func (*precisePrefix) Name() string { return PrecisePrefix }

// Needs reports that precise_prefix tokenizes the prompt text.
func (*precisePrefix) Needs() Needs { return Needs{Text: true} }

func (p *precisePrefix) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.match(req, cands, true)
	best := 0
	for _, n := range m.blocks {
		best = max(best, n)
	}
	bs := m.bs

	var d Decision
	switch {
	case imbalanced(cands, p.p):
		d = Decision{Index: p.leastLoaded(cands, func(int) bool { return true }), Outcome: OutcomeLoadBalance}
	case m.tokens > 0 && float64(best*bs)/float64(m.tokens) > p.p.CacheThreshold:
		d = Decision{Index: p.leastLoaded(cands, func(i int) bool { return m.blocks[i] == best }), Outcome: OutcomeCacheHit}
	default:
		d = Decision{Index: p.leastLoaded(cands, func(int) bool { return true }), Outcome: OutcomeCacheMiss}
	}
	p.chose(m, cands, &d)
	if req.Explain {
		d.Explained = m.explain(cands)
	}
	return d, true
}

// explain is each candidate's matched blocks, load and predicted hit.
func (m prefixMatch) explain(cands []Candidate) []Explained {
	out := explained(len(cands))
	for i, n := range m.blocks {
		out[i].Scores["matched_blocks"] = float64(n)
		out[i].Matched, out[i].Approx = n*m.bs, m.approx[i]
	}
	return out
}

// prefixMatch is how much of a request's prompt each candidate holds.
type prefixMatch struct {
	keys   []uint64 // the prompt's reusable full blocks
	bs     int
	tokens int   // prompt tokens
	blocks []int // leading blocks each candidate holds
	approx []bool
}

// match scores every candidate: from its KV events when precise (its
// router-side record when those went stale), or from the router-side record
// only. The caller holds p.mu.
func (p *precisePrefix) match(req Request, cands []Candidate, precise bool) prefixMatch {
	tokens := p.tokenize(req.Text)
	m := prefixMatch{tokens: len(tokens), blocks: make([]int, len(cands)), approx: make([]bool, len(cands))}
	m.keys, m.bs = reusableKeys(tokens, p.idx.BlockSize())
	p.idx.mu.RLock()
	defer p.idx.mu.RUnlock()
	for i, c := range cands {
		n, ok := 0, false
		if precise {
			n, ok = p.idx.match(c.ID, m.keys)
		}
		if !ok {
			n, m.approx[i] = p.routed(c.ID).match(m.keys), true
		}
		m.blocks[i] = n
	}
	return m
}

// chose records d: its predicted cached tokens, how it was scored, and the
// blocks now sent to the chosen candidate. The caller holds p.mu.
func (p *precisePrefix) chose(m prefixMatch, cands []Candidate, d *Decision) {
	d.MatchedTokens = m.blocks[d.Index] * m.bs
	if m.approx[d.Index] {
		p.stats.Approximate++
	} else {
		p.stats.Precise++
	}
	p.routed(cands[d.Index].ID).add(m.keys)
}

// leastLoaded is the candidate among those ok admits with the fewest
// in-flight requests, then the fewest blocks held, then the first.
func (p *precisePrefix) leastLoaded(cands []Candidate, ok func(int) bool) int {
	best := -1
	var bestBlocks int
	for i, c := range cands {
		if !ok(i) {
			continue
		}
		blocks := p.idx.Blocks(c.ID)
		if best < 0 || c.InFlight < cands[best].InFlight || c.InFlight == cands[best].InFlight && blocks < bestBlocks {
			best, bestBlocks = i, blocks
		}
	}
	return max(best, 0)
}

func (p *precisePrefix) routed(id string) *routedBlocks {
	r := p.approx[id]
	if r == nil {
		r = &routedBlocks{lru: list.New(), at: map[uint64]*list.Element{}}
		p.approx[id] = r
	}
	return r
}

func (r *routedBlocks) match(keys []uint64) int {
	n := 0
	for n < len(keys) {
		if _, ok := r.at[keys[n]]; !ok {
			break
		}
		n++
	}
	return n
}

func (r *routedBlocks) add(keys []uint64) {
	for _, k := range keys {
		if e, ok := r.at[k]; ok {
			r.lru.MoveToFront(e)
			continue
		}
		r.at[k] = r.lru.PushFront(k)
		if r.lru.Len() > approxCap {
			delete(r.at, r.lru.Remove(r.lru.Back()).(uint64))
		}
	}
}

// Forget drops the router's record of what it sent a target that left or
// turned unhealthy; its event copy stays, as events are the truth.
func (p *precisePrefix) Forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.approx, id)
}

// Stats returns the pick counts so far.
func (p *precisePrefix) Stats() PreciseStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
