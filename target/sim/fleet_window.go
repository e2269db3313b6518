package sim

import "time"

// WindowCounts are what one worker's engines counted over a fleet window
// (OpenWindow to Window): the figures a real row takes from the workers'
// /metrics before and after its measured window, summed over the
// worker's data-parallel ranks.
type WindowCounts struct {
	// PrefixHits and PrefixQueries are prompt tokens (vllm:prefix_cache_*).
	PrefixHits, PrefixQueries float64
	Preemptions               float64
	// KVPullsOK and KVPullsFailed are a decode engine's KV pulls (PD).
	KVPullsOK, KVPullsFailed float64
	// CPUTierHits are prompt tokens loaded from the CPU tier
	// (vllm:external_prefix_cache_hits_total).
	CPUTierHits float64
	// KVUsagePeak is the highest KV usage (0..1) of a step of the window
	// on any rank (exact, where a scraped histogram gives it to 0.05);
	// Stepped is false when no rank made a step. KVUsageMean is the ranks'
	// mean of their KV usage averaged over the window's virtual time.
	KVUsagePeak, KVUsageMean float64
	Stepped                  bool
}

// tally is a counter a fleet engine keeps in plain memory: the fleet runs
// on one goroutine, so it needs no atomics and no registry.
type tally struct{ v float64 }

func (t *tally) Inc()          { t.v++ }
func (t *tally) Add(x float64) { t.v += x }

// peak keeps the largest value observed.
type peak struct {
	v  float64
	ok bool
}

func (p *peak) Observe(x float64) { p.v, p.ok = max(p.v, x), true }

// usage is a KV usage gauge integrated over the fleet's virtual time.
type usage struct {
	f     *Fleet
	v     float64
	since time.Time
	area  float64 // ∫ usage dt, in usage·seconds, up to since
}

func (u *usage) Set(x float64) {
	u.settle()
	u.v = x
}

// settle integrates the current value up to the fleet's now.
func (u *usage) settle() {
	now := u.f.now
	u.area += u.v * now.Sub(u.since).Seconds()
	u.since = now
}

// rankCounts are one fleet rank's window counters.
type rankCounts struct {
	hits, queries, preempt, pullsOK, pullsFailed, cpuHits tally
	step                                                  peak
	kv                                                    usage
}

// countingMetrics are rank metrics that keep only what a row's window
// figures need (in rc), discarding the rest.
func countingMetrics(rc *rankCounts) *rankMetrics {
	m := discardMetrics()
	m.prefixHits, m.prefixQueries, m.preemptions = &rc.hits, &rc.queries, &rc.preempt
	m.kvPullsOK, m.kvPullsFailed, m.externalHits = &rc.pullsOK, &rc.pullsFailed, &rc.cpuHits
	m.kvUsageStep, m.kvUsage = &rc.step, &rc.kv
	return m
}

// OpenWindow starts a window: Window then reports what the engines
// counted from this virtual instant on.
func (f *Fleet) OpenWindow() {
	f.windowAt = f.now
	for i := range f.counts {
		rc := &f.counts[i]
		rc.kv.settle()
		f.opened[i] = *rc
		rc.step = peak{}
	}
}

// Window is what each worker's engines counted since OpenWindow (since
// the fleet was built without one), in worker order; nil for a fleet whose
// engines keep Prometheus metrics instead (Replay's).
func (f *Fleet) Window() []WindowCounts {
	if f.counts == nil {
		return nil
	}
	span := f.now.Sub(f.windowAt).Seconds()
	out := make([]WindowCounts, len(f.servers))
	for w := range f.servers {
		wc := &out[w]
		ranks := len(f.servers[w].ranks)
		for g := f.first[w]; g < f.first[w]+ranks; g++ {
			rc, o := &f.counts[g], &f.opened[g]
			rc.kv.settle()
			wc.PrefixHits += rc.hits.v - o.hits.v
			wc.PrefixQueries += rc.queries.v - o.queries.v
			wc.Preemptions += rc.preempt.v - o.preempt.v
			wc.KVPullsOK += rc.pullsOK.v - o.pullsOK.v
			wc.KVPullsFailed += rc.pullsFailed.v - o.pullsFailed.v
			wc.CPUTierHits += rc.cpuHits.v - o.cpuHits.v
			if rc.step.ok {
				wc.KVUsagePeak, wc.Stepped = max(wc.KVUsagePeak, rc.step.v), true
			}
			if span > 0 {
				wc.KVUsageMean += (rc.kv.area - o.kv.area) / span / float64(ranks)
			}
		}
	}
	return out
}
