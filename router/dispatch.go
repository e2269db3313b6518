package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/policy"
)

// errRequestTimeout is the cause of a request's context when
// request_timeout_secs passed.
var errRequestTimeout = errors.New("request_timeout_secs exceeded")

// failKind classifies an attempt that did not reach the client.
type failKind int

const (
	failUpstream  failKind = iota // transport error or 500/502
	failSaturated                 // 429 or 503: the worker is full
	failTimeout                   // 408/504 from the worker, or our deadline
	failClient                    // the client went away
)

// attemptFailure describes why an attempt was not relayed.
type attemptFailure struct {
	kind   failKind
	worker string
	detail string
	// spoiled is set when the worker answered, but not in HTTP (a
	// malformed head, conflicting lengths): it got the request, so the
	// request's later attempts go to other workers only.
	spoiled *Worker
}

// dispatch routes in to pool: it picks a target with pol (nil: the pool's
// policy, whose decisions are counted in metrics), runs one attempt, and on a
// retryable failure backs off and picks again (possibly another worker),
// until an attempt reaches the client or the attempts run out. It reports
// the error type it answered with ("" on success).
func (r *Router) dispatch(ctx context.Context, w http.ResponseWriter, in *inbound, pool *Pool, pol policy.Policy) string {
	o := r.tryTargets(ctx, in, pool, pol, nil, func(ctx context.Context, t target) *attemptFailure {
		return r.attempt(ctx, w, in, pool, t)
	})
	return r.answer(ctx, w, pool, o)
}

// tries is how a sequence of attempts ended.
type tries struct {
	ok        bool            // an attempt succeeded
	last      *attemptFailure // the last failure, if any
	n         int             // attempts made
	saturated bool            // some worker answered 429/503
}

// tryTargets runs try on targets picked from pool by pol (nil: the pool's
// policy, decisions counted), starting with first when it is given (already
// picked and counted), until one succeeds, the client leaves, or the
// attempts run out; it backs off between attempts. Collocated dispatch and
// both prefill/decode legs share it, so retries behave the same everywhere.
func (r *Router) tryTargets(ctx context.Context, in *inbound, pool *Pool, pol policy.Policy, first *target,
	try func(context.Context, target) *attemptFailure) tries {
	attempts := r.cfg.Retry.MaxRetries
	if r.cfg.Retry.Disable {
		attempts = 1
	}
	var o tries
	var spoiled []*Worker // workers this request must not go to again
	for o.n < attempts {
		var t target
		if first != nil && o.n == 0 && !slices.Contains(spoiled, first.w) {
			t = *first
		} else {
			var ok bool
			var d policy.Decision
			if t, d, ok = r.choose(pool, pol, in.policy, spoiled...); !ok {
				break
			}
			if pool == r.pool {
				r.noteReceipt(in, d.Receipt)
			}
		}
		o.n++
		f := try(ctx, t)
		if f == nil {
			o.ok = true
			return o
		}
		if f.spoiled != nil {
			spoiled = append(spoiled, f.spoiled)
		}
		o.last = f
		o.saturated = o.saturated || f.kind == failSaturated
		if f.kind == failClient || ctx.Err() != nil {
			break
		}
		if o.n < attempts {
			r.m.retries.WithLabelValues(in.route).Inc()
			if !r.backoff(ctx, o.n) {
				break
			}
		}
	}
	if o.n == attempts && o.last != nil {
		r.m.retriesExhausted.WithLabelValues(in.route).Inc()
	}
	return o
}

// answer writes the client's error for failed tries; it reports the error
// type ("" on success, "client_gone" when nobody is listening).
func (r *Router) answer(ctx context.Context, w http.ResponseWriter, pool *Pool, o tries) string {
	if o.ok {
		return ""
	}
	e := r.dispatchError(ctx, pool, o.last, o.saturated, o.n)
	if e == nil {
		return "client_gone"
	}
	writeError(w, e)
	return e.Type
}

// dispatchError turns the last failure into the client's answer; nil when
// the client is gone and nobody is listening.
func (r *Router) dispatchError(ctx context.Context, pool *Pool, last *attemptFailure, saturated bool, n int) *apiError {
	size, healthy, open := pool.availability()
	switch {
	case errors.Is(context.Cause(ctx), errRequestTimeout):
		return newAPIError(http.StatusGatewayTimeout, ErrTypeUpstreamTimeout,
			fmt.Sprintf("no response within request_timeout_secs (%gs) after %d attempt(s)", r.cfg.RequestTimeoutSecs, n))
	case ctx.Err() != nil || (last != nil && last.kind == failClient):
		return nil
	case n == 0:
		return newAPIError(http.StatusServiceUnavailable, ErrTypeNoAvailableWorkers,
			fmt.Sprintf("no available workers: %d in pool %q, %d healthy, %d with open circuits", size, pool.name, healthy, open))
	case saturated:
		e := newAPIError(http.StatusServiceUnavailable, ErrTypePoolExhausted,
			fmt.Sprintf("pool %q exhausted: %d attempt(s) failed while workers were saturated (last: %s %s)", pool.name, n, last.worker, last.detail))
		e.Retries, e.PoolSize, e.OpenCircuits = &n, &size, &open
		return e
	case last.kind == failTimeout:
		return newAPIError(http.StatusGatewayTimeout, ErrTypeUpstreamTimeout,
			fmt.Sprintf("worker timed out after %d attempt(s) (last: %s %s)", n, last.worker, last.detail))
	}
	return newAPIError(http.StatusBadGateway, ErrTypeUpstreamError,
		fmt.Sprintf("workers failed after %d attempt(s) (last: %s %s)", n, last.worker, last.detail))
}

// backoff sleeps before retry n (1-based): initial × multiplier^(n-1),
// capped, with ±jitter. It reports false if ctx ended first.
func (r *Router) backoff(ctx context.Context, n int) bool {
	rc := r.cfg.Retry
	d := float64(rc.InitialBackoffMs) * math.Pow(rc.BackoffMultiplier, float64(n-1))
	d = min(d, float64(rc.MaxBackoffMs))
	d *= 1 + rc.JitterFactor*(2*r.rnd.Float64()-1)
	sleep := time.Duration(d * float64(time.Millisecond))
	r.m.backoff.WithLabelValues(strconv.Itoa(n)).Observe(sleep.Seconds())
	if sleep <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// choose picks a target from pool with pol (nil: the pool's policy, whose
// decision is counted in metrics) under the router's load signal, among
// the available workers not in skip. Every
// routing decision — collocated, both PD legs, retries, and the virtual-time
// path (virtual.go) — is made here.
func (r *Router) choose(pool *Pool, pol policy.Policy, req policy.Request, skip ...*Worker) (target, policy.Decision, bool) {
	req.Explain = r.rcpt.on // receipt.go
	t, d, ok := pool.pick(pol, req, r.cfg.LoadSignal == LoadSignalInFlightQueue, skip...)
	if ok && pol == nil {
		r.recordDecision(pool, t, d)
	}
	return t, d, ok
}

func (r *Router) recordDecision(pool *Pool, t target, d policy.Decision) {
	t.w.series.decisions[t.rank].get(func() prometheus.Counter {
		return r.m.decisions.WithLabelValues(pool.policy.Name(), t.id())
	}).Inc()
	switch d.Outcome {
	case policy.OutcomeCacheHit:
		r.m.cacheHits.Inc()
	case policy.OutcomeCacheMiss:
		r.m.cacheMisses.Inc()
	case policy.OutcomeLoadBalance:
		r.m.lbEvents.Inc()
	}
}
