package policy

import "sync"

// evictBatch bounds the entries one Pick, or one step of Evict, removes
// while holding the policy lock. Keeping the tree under its cap after every
// insert means a Pick removes about as many bytes as it added, far fewer
// than this bound; the bound only matters after the cap was lowered or a
// burst outran it, and then the remainder is left to the next calls.
const evictBatch = 4096

// cacheAware routes requests that share a prefix to the worker that most
// likely still holds it in its KV cache, unless loads are imbalanced.
//
// Rule (router.md): with the router's own in-flight counts, the pool is
// imbalanced when max-min > BalanceAbsThreshold and max > min ×
// BalanceRelThreshold; then the least-loaded candidate wins (a load-balancing
// event). Otherwise the text is matched against the model's tree: a match
// rate strictly above CacheThreshold sends the request to the matching
// candidate (the least loaded among equal matches), anything else goes to the
// least-loaded candidate. Ties on load go to the candidate holding the least
// text, so cold prefix groups spread over idle workers instead of all landing
// on the first one. The text is then inserted under the chosen candidate, and
// least-recently-used entries are evicted until the tree holds at most
// MaxTreeSize bytes again (a bounded amount of work per request).
type cacheAware struct {
	p Params

	mu    sync.Mutex
	tree  *radix
	epoch uint64 // one tick per decision
}

var (
	_ Policy       = (*cacheAware)(nil)
	_ Forgetter    = (*cacheAware)(nil)
	_ Evicter      = (*cacheAware)(nil)
	_ Sizer        = (*cacheAware)(nil)
	_ MemoryHolder = (*cacheAware)(nil)
	_ Needer       = (*cacheAware)(nil)
)

func newCacheAware(p Params) *cacheAware { return &cacheAware{p: p, tree: newRadix()} }

func (*cacheAware) Name() string { return CacheAware }

// Needs reports that cache_aware matches the model's prompt text.
func (*cacheAware) Needs() Needs { return Needs{Text: true} }

func (p *cacheAware) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epoch++
	for i, c := range cands {
		if t := p.tree.tenants[c.ID]; t != nil {
			t.epoch, t.cand = p.epoch, i
		}
	}

	var d Decision
	if req.Explain {
		d.Explained = p.explain(req, cands)
	}
	if imbalanced(cands, p.p) {
		d.Index, d.Outcome = p.leastLoaded(cands), OutcomeLoadBalance
	} else {
		matched, holder := p.tree.match(req.Model, req.Text, p.epoch)
		if len(req.Text) > 0 && float64(matched)/float64(len(req.Text)) > p.p.CacheThreshold {
			d.Index, d.Outcome = p.leastLoadedHolder(cands, holder), OutcomeCacheHit
		} else {
			d.Index, d.Outcome = p.leastLoaded(cands), OutcomeCacheMiss
		}
	}
	// The tree never holds more than MaxTreeSize bytes, so more of a text
	// than that could only be copied in and evicted at once: its prefix is
	// what a later request can match.
	text := req.Text
	if len(text) > p.p.MaxTreeSize {
		text = text[:p.p.MaxTreeSize]
	}
	p.tree.insert(req.Model, text, cands[d.Index].ID)
	p.trim()
	return d, true
}

// imbalanced is the load gate of the prefix policies (router.md).
func imbalanced(cands []Candidate, p Params) bool {
	lo, hi := cands[0].InFlight, cands[0].InFlight
	for _, c := range cands[1:] {
		lo, hi = min(lo, c.InFlight), max(hi, c.InFlight)
	}
	return hi-lo > int64(p.BalanceAbsThreshold) && float64(hi) > float64(lo)*p.BalanceRelThreshold
}

// less orders candidates for the least-loaded choice: fewer in-flight
// requests, then the smaller tree share, then the earlier candidate.
func (p *cacheAware) less(cands []Candidate, i, j int) bool {
	a, b := cands[i], cands[j]
	if a.InFlight != b.InFlight {
		return a.InFlight < b.InFlight
	}
	if ca, cb := p.chars(a.ID), p.chars(b.ID); ca != cb {
		return ca < cb
	}
	return i < j
}

func (p *cacheAware) chars(id string) int {
	if t := p.tree.tenants[id]; t != nil {
		return t.chars
	}
	return 0
}

// leastLoaded returns the index of the least-loaded candidate.
func (p *cacheAware) leastLoaded(cands []Candidate) int {
	best := 0
	for i := 1; i < len(cands); i++ {
		if p.less(cands, i, best) {
			best = i
		}
	}
	return best
}

// leastLoadedHolder returns the least-loaded candidate among those holding
// n (n holds at least one candidate when match returned it).
func (p *cacheAware) leastLoadedHolder(cands []Candidate, n *node) int {
	best := -1
	for _, e := range n.entries {
		if e.t.epoch != p.epoch {
			continue
		}
		if best < 0 || p.less(cands, e.t.cand, best) {
			best = e.t.cand
		}
	}
	return max(best, 0)
}

// Forget drops a target from the tree (it left the pool or turned unhealthy).
func (p *cacheAware) Forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tree.forget(id)
}

// Evict trims least-recently-used entries until the tree holds at most
// MaxTreeSize bytes. Pick already keeps the tree under the cap; this
// periodic pass only finishes what a Pick's bounded share left over, and it
// releases the lock after every batch so routing never waits behind it.
func (p *cacheAware) Evict() {
	for {
		p.mu.Lock()
		more := p.trim()
		p.mu.Unlock()
		if !more {
			return
		}
	}
}

// trim evicts at most evictBatch entries towards the cap and reports
// whether the tree is still over it. The caller holds the lock.
func (p *cacheAware) trim() (over bool) {
	for range evictBatch {
		if p.tree.held <= p.p.MaxTreeSize || !p.tree.evictOldest() {
			return false
		}
	}
	return p.tree.held > p.p.MaxTreeSize
}

// Sizes reports characters held per target.
func (p *cacheAware) Sizes() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.tree.tenants))
	for id, t := range p.tree.tenants {
		out[id] = t.chars
	}
	return out
}

// HeldBytes reports the bytes the tree holds, the quantity MaxTreeSize
// bounds.
func (p *cacheAware) HeldBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tree.held
}
