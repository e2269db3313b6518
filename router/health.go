package router

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
)

// StartupProbeInterval is how often a worker that never answered a health
// check is probed: a router started before its workers serves within about
// this long of them coming up (vllm-router waits for its workers at
// startup), while workers that answered once are probed every
// health_check.interval_secs.
const StartupProbeInterval = 200 * time.Millisecond

// startProbing marks every worker unhealthy until a probe succeeds (workers
// added later start so too) and runs the first round of probes. Serve calls
// it before it accepts a request: a worker that answers is routed to from
// the first request on, one that does not is never routed to until it does.
func (r *Router) startProbing(ctx context.Context) {
	for _, p := range r.pools {
		p.probing.Store(true)
		for _, w := range p.Workers() {
			p.setHealth(w, false)
		}
	}
	r.probeAll(ctx, everyWorker)
}

// healthLoop probes every worker every interval, and the workers that
// never answered every StartupProbeInterval.
func (r *Router) healthLoop(ctx context.Context) {
	regular := time.NewTicker(secs(r.cfg.HealthCheck.IntervalSecs))
	defer regular.Stop()
	startup := time.NewTicker(StartupProbeInterval)
	defer startup.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-regular.C:
			r.probeAll(ctx, everyWorker)
		case <-startup.C:
			r.probeAll(ctx, unproven)
		}
	}
}

func everyWorker(*Worker) bool { return true }

func unproven(w *Worker) bool { return !w.proven.Load() }

// probeAll probes the workers that which selects, all at once, and waits
// for the answers.
func (r *Router) probeAll(ctx context.Context, which func(*Worker) bool) {
	var wg sync.WaitGroup
	for _, p := range r.pools {
		for _, w := range p.members() {
			if which(w) {
				wg.Go(func() { r.probe(ctx, p, w) })
			}
		}
	}
	wg.Wait()
}

// probe runs one health check and applies the consecutive-result thresholds.
func (r *Router) probe(ctx context.Context, p *Pool, w *Worker) {
	hc := r.cfg.HealthCheck
	pctx, cancel := context.WithTimeout(ctx, secs(hc.TimeoutSecs))
	defer cancel()
	ok := false
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, w.url+hc.Endpoint, nil)
	if err == nil {
		if resp, err := r.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			ok = resp.StatusCode/100 == 2
		}
	}
	if ctx.Err() != nil {
		return // shutting down: a cancelled probe says nothing about the worker
	}
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	if ok {
		w.hcOKs, w.hcFails = w.hcOKs+1, 0
		if !w.proven.Load() {
			// The first answer ever: the worker is up (the startup wait),
			// without success_threshold's streak, which is for recovery.
			w.proven.Store(true)
			if p.setHealth(w, true) {
				r.log.Info("worker ready", "worker", w.url)
			}
			return
		}
		if !w.Healthy() && w.hcOKs >= hc.SuccessThreshold && p.setHealth(w, true) {
			r.log.Info("worker healthy", "worker", w.url)
		}
		return
	}
	w.hcFails, w.hcOKs = w.hcFails+1, 0
	if w.Healthy() && w.hcFails >= hc.FailureThreshold && p.setHealth(w, false) {
		r.log.Warn("worker unhealthy", "worker", w.url, "failures", w.hcFails)
	}
}

// evictionLoop trims stateful policies every eviction interval.
func (r *Router) evictionLoop(ctx context.Context) {
	tick(ctx, r.EvictionInterval(), func(context.Context) { r.Evict() })
}

// EvictionInterval is how often stateful policies are trimmed.
func (r *Router) EvictionInterval() time.Duration {
	return time.Duration(r.cfg.EvictionIntervalSecs) * time.Second
}

// Evict trims every stateful policy once: the eviction loop's tick, which
// the virtual-time path calls at virtual intervals.
func (r *Router) Evict() {
	for _, p := range r.pools {
		if e, ok := p.policy.(policy.Evicter); ok {
			e.Evict()
		}
	}
}
