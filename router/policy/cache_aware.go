package policy

import "sync"

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
// on the first one. The text is then inserted under the chosen candidate.
type cacheAware struct {
	p Params

	mu   sync.Mutex
	tree *radix
	now  uint64 // logical clock: one tick per decision, deterministic
}

var (
	_ Policy    = (*cacheAware)(nil)
	_ Forgetter = (*cacheAware)(nil)
	_ Evicter   = (*cacheAware)(nil)
	_ Sizer     = (*cacheAware)(nil)
)

func newCacheAware(p Params) *cacheAware { return &cacheAware{p: p, tree: newRadix()} }

func (*cacheAware) Name() string { return CacheAware }

func (p *cacheAware) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now++

	var d Decision
	if p.imbalanced(cands) {
		d = Decision{Index: p.leastLoaded(cands, nil), Outcome: OutcomeLoadBalance}
	} else {
		allowed := make(map[string]bool, len(cands))
		for _, c := range cands {
			allowed[c.ID] = true
		}
		matched, holders := p.tree.match(req.Model, req.Text, allowed)
		if len(req.Text) > 0 && float64(matched)/float64(len(req.Text)) > p.p.CacheThreshold {
			only := make(map[string]bool, len(holders))
			for _, h := range holders {
				only[h] = true
			}
			d = Decision{Index: p.leastLoaded(cands, only), Outcome: OutcomeCacheHit}
		} else {
			d = Decision{Index: p.leastLoaded(cands, nil), Outcome: OutcomeCacheMiss}
		}
	}
	p.tree.insert(req.Model, req.Text, cands[d.Index].ID, p.now)
	return d, true
}

func (p *cacheAware) imbalanced(cands []Candidate) bool {
	lo, hi := cands[0].InFlight, cands[0].InFlight
	for _, c := range cands[1:] {
		lo, hi = min(lo, c.InFlight), max(hi, c.InFlight)
	}
	return hi-lo > int64(p.p.BalanceAbsThreshold) && float64(hi) > float64(lo)*p.p.BalanceRelThreshold
}

// leastLoaded returns the index of the candidate (among only, if non-nil)
// with the fewest in-flight requests; ties go to the smallest tree share,
// then to the earliest candidate.
func (p *cacheAware) leastLoaded(cands []Candidate, only map[string]bool) int {
	best := -1
	for i, c := range cands {
		if only != nil && !only[c.ID] {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := cands[best]
		if c.InFlight < b.InFlight || (c.InFlight == b.InFlight && p.tree.sizes[c.ID] < p.tree.sizes[b.ID]) {
			best = i
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

// Evict trims least-recently-used leaves until the whole tree, over every
// target and model, holds at most MaxTreeSize characters.
func (p *cacheAware) Evict() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tree.evict(p.p.MaxTreeSize)
}

// Sizes reports characters held per target.
func (p *cacheAware) Sizes() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.tree.sizes))
	for id, n := range p.tree.sizes {
		out[id] = n
	}
	return out
}
