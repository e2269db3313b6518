package router

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/autoinfer/autoinfer/router/policy"
)

// Pool is one set of workers with the policy that chooses among them. A
// collocated router has one; prefill/decode mode has one per role. The pool
// owns membership and exact load accounting; health checks, circuits and
// metrics read it.
type Pool struct {
	name   string
	policy policy.Policy
	dp     int
	newBrk func(url string) *Breaker

	// probing is set once Serve health-checks the pool: a worker added
	// then starts unhealthy until a probe succeeds.
	probing atomic.Bool

	mu       sync.RWMutex
	workers  map[string]*Worker
	draining map[string]*Worker // removed with attempts still in flight

	// sorted is the members in URL order, rebuilt (copy on write) under mu
	// whenever membership changes, so a pick reads it without a lock, a
	// sort or an allocation. Readers must not modify it.
	sorted atomic.Pointer[[]*Worker]
	// scratch recycles the candidate and target lists a pick builds.
	scratch sync.Pool
}

// pickScratch is one pick's candidate list and the targets behind it.
type pickScratch struct {
	cands   []policy.Candidate
	targets []target
}

// NewPool builds a pool named name (a metrics and log label) choosing with
// pol; each worker is addressed as dp ranks. newBreaker makes a worker's
// circuit.
func NewPool(name string, pol policy.Policy, dp int, newBreaker func(url string) *Breaker) *Pool {
	p := &Pool{name: name, policy: pol, dp: max(dp, 1), newBrk: newBreaker,
		workers: map[string]*Worker{}, draining: map[string]*Worker{}}
	p.sorted.Store(&[]*Worker{})
	p.scratch.New = func() any { return new(pickScratch) }
	return p
}

// resort publishes a new sorted member list; the caller holds mu.
func (p *Pool) resort() {
	ws := make([]*Worker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *Worker) int { return strings.Compare(a.url, b.url) })
	p.sorted.Store(&ws)
}

// members is the current sorted member list, shared: never modify it.
func (p *Pool) members() []*Worker { return *p.sorted.Load() }

// Name is the pool's label.
func (p *Pool) Name() string { return p.name }

// Policy is the pool's selection policy.
func (p *Pool) Policy() policy.Policy { return p.policy }

// Add puts url in the pool; it reports false if it was already a member. A
// URL removed while its attempts drain comes back with those counts, so its
// load stays exact.
func (p *Pool) Add(url string) (*Worker, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.workers[url]; ok {
		return w, false
	}
	w, ok := p.draining[url]
	if ok && w.removed.Load() {
		delete(p.draining, url)
		w.removed.Store(false)
	} else {
		w = newWorker(url, p.dp, p.newBrk(url))
		w.healthy.Store(!p.probing.Load())
	}
	p.workers[url] = w
	p.resort()
	return w, true
}

// Remove takes url out of the pool; in-flight attempts finish and release
// their load on the removed worker. It reports false for a non-member.
func (p *Pool) Remove(url string) bool {
	p.mu.Lock()
	w, ok := p.workers[url]
	if ok {
		delete(p.workers, url)
		p.resort()
		w.removed.Store(true)
		if w.Load() > 0 {
			p.draining[url] = w
		}
	}
	p.mu.Unlock()
	if ok {
		p.forget(w)
	}
	return ok
}

// reap drops a removed worker once its last attempt released.
func (p *Pool) reap(w *Worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.draining[w.url] == w && w.Load() == 0 {
		delete(p.draining, w.url)
	}
}

// forget tells a stateful policy to drop every rank of w.
func (p *Pool) forget(w *Worker) {
	if f, ok := p.policy.(policy.Forgetter); ok {
		for r := range w.ranks {
			f.Forget(w.ids[r])
		}
	}
}

// Get returns the member url, or nil.
func (p *Pool) Get(url string) *Worker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.workers[url]
}

// Workers returns the members sorted by URL.
func (p *Pool) Workers() []*Worker { return slices.Clone(p.members()) }

// Loads returns the exact in-flight count per worker URL, including removed
// workers whose attempts are still running.
func (p *Pool) Loads() map[string]int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]int64, len(p.workers)+len(p.draining))
	for url, w := range p.workers {
		out[url] = w.Load()
	}
	for url, w := range p.draining {
		out[url] += w.Load()
	}
	return out
}

// candidates appends every rank of every healthy worker whose circuit
// admits traffic and that is not in skip, in URL order, with its load
// signal, to s.
func (p *Pool) candidates(s *pickScratch, withQueue bool, skip []*Worker) {
	s.cands, s.targets = s.cands[:0], s.targets[:0]
	for _, w := range p.members() {
		if !w.Healthy() || !w.breaker.Allow() || slices.Contains(skip, w) {
			continue
		}
		var q int64
		if withQueue {
			q = w.queue.Load()
		}
		for r := range w.ranks {
			s.cands = append(s.cands, policy.Candidate{ID: w.ids[r], InFlight: w.ranks[r].Load(), Queue: q})
			s.targets = append(s.targets, target{w, r})
		}
	}
}

// pick asks pol (nil: the pool's policy) for a target among the available
// workers not in skip. ok is false when none is left. In steady state it
// allocates nothing: the member list is a shared snapshot and the
// candidate lists are recycled.
func (p *Pool) pick(pol policy.Policy, req policy.Request, withQueue bool, skip ...*Worker) (target, policy.Decision, bool) {
	if pol == nil {
		pol = p.policy
	}
	s := p.scratch.Get().(*pickScratch)
	defer p.scratch.Put(s)
	p.candidates(s, withQueue, skip)
	d, ok := pol.Pick(req, s.cands)
	if !ok || d.Index < 0 || d.Index >= len(s.targets) {
		return target{}, d, false
	}
	if req.Explain {
		d.Receipt = policy.NewReceipt(pol.Name(), s.cands, d)
	}
	return s.targets[d.Index], d, true
}

// acquire binds one attempt to t: the load is held until the guard is released.
func (p *Pool) acquire(t target) *guard {
	g := new(guard)
	p.hold(g, t)
	return g
}

// hold is acquire into a guard the caller owns (the attempt's, on its
// stack: one allocation less per request).
func (p *Pool) hold(g *guard, t target) {
	t.w.ranks[t.rank].Add(1)
	if t.w.removed.Load() {
		// Picked just before a concurrent Remove: keep the load visible.
		p.mu.Lock()
		if p.workers[t.w.url] != t.w {
			p.draining[t.w.url] = t.w
		}
		p.mu.Unlock()
	}
	g.pool, g.t = p, t
}

// availability summarises the pool for pool_exhausted bodies and readiness.
func (p *Pool) availability() (size, healthy, openCircuits int) {
	for _, w := range p.members() {
		size++
		if w.Healthy() {
			healthy++
		}
		if w.breaker.State() == BreakerOpen {
			openCircuits++
		}
	}
	return size, healthy, openCircuits
}

// setHealth records a health verdict; a worker turning unhealthy is dropped
// from the policy's state (cache_aware's tree).
func (p *Pool) setHealth(w *Worker, healthy bool) (changed bool) {
	if w.healthy.Swap(healthy) == healthy {
		return false
	}
	if !healthy {
		p.forget(w)
	}
	return true
}
