package router

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
)

// healthLoop probes every worker at once, then every interval.
func (r *Router) healthLoop(ctx context.Context) {
	r.probeAll(ctx)
	tick(ctx, secs(r.cfg.HealthCheck.IntervalSecs), r.probeAll)
}

func (r *Router) probeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range r.pools {
		for _, w := range p.Workers() {
			wg.Go(func() { r.probe(ctx, p, w) })
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
	if ok {
		w.hcOKs, w.hcFails = w.hcOKs+1, 0
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
