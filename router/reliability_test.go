package router

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// Timer-driven reliability logic — request timeouts, retry backoff, the
// circuit's open period, the queue timeout — runs in synctest bubbles: the
// fake clock reaches a deadline only when every goroutine waits for it, so
// a loaded machine can neither fire a timeout early nor stretch a retry
// past one.

func TestSaturatedWorkersGivePoolExhausted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		a, b := e.worker(), e.worker()
		a.FailStatus.Store(429)
		b.FailStatus.Store(503)
		cfg := testConfig("round_robin", a.URL, b.URL)
		cfg.Retry.MaxRetries = 3
		cfg.CircuitBreaker.FailureThreshold = 100
		r, base := e.router(cfg)
		res := e.Post(base+"/v1/completions", `{"prompt":"x"}`)
		if res.Status != 503 || res.ErrorType() != ErrTypePoolExhausted {
			t.Fatalf("got %d %s, want 503 pool_exhausted", res.Status, res.Body)
		}
		var body struct {
			Error struct {
				Retries      int `json:"retries"`
				PoolSize     int `json:"pool_size"`
				OpenCircuits int `json:"open_circuits"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(res.Body), &body); err != nil || body.Error.Retries != 3 || body.Error.PoolSize != 2 || body.Error.OpenCircuits != 0 {
			t.Fatalf("pool_exhausted details %+v (%v), want retries 3, pool_size 2, open_circuits 0", body.Error, err)
		}
		if n := a.Requests.Load() + b.Requests.Load(); n != 3 {
			t.Errorf("attempts reached workers %d times, want 3", n)
		}
		synctest.Wait()
		if n := testutil.ToFloat64(r.m.retriesExhausted.WithLabelValues("/v1/completions")); n != 1 {
			t.Errorf("retries_exhausted_total = %v", n)
		}
	})
}

// Each case has its own router: the 502 and dead-worker cases used to share
// the slow case's 200 ms request timeout on the wall clock, and under CPU
// load their two attempts plus backoff outlasted it and answered 504.
func TestUpstreamErrorAndTimeoutTypes(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*env, *routertest.Worker, string) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		cfg.RequestTimeoutSecs = 0.2
		cfg.Retry.MaxRetries = 2
		cfg.Retry.InitialBackoffMs, cfg.Retry.MaxBackoffMs, cfg.Retry.JitterFactor = 100, 100, 0.2
		_, base := e.router(cfg)
		return e, f, base
	}
	t.Run("slow worker", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e, _, base := setup(t)
			start := time.Now()
			res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "5000")
			if res.Status != 504 || res.ErrorType() != ErrTypeUpstreamTimeout {
				t.Fatalf("slow worker → %d %s, want 504 upstream_timeout", res.Status, res.Body)
			}
			if took := time.Since(start); took != 200*time.Millisecond {
				t.Errorf("answered after %v on the fake clock, want request_timeout_secs (200ms) exactly", took)
			}
		})
	})
	t.Run("502 retried", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e, f, base := setup(t)
			start := time.Now()
			res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "502")
			if res.Status != 502 || res.ErrorType() != ErrTypeUpstreamError {
				t.Fatalf("502 worker → %d %s, want 502 upstream_error", res.Status, res.Body)
			}
			if n := f.Requests.Load(); n != 2 {
				t.Errorf("worker saw %d attempts, want 2", n)
			}
			// One backoff of 100 ms ± 20 % between the attempts, nothing else.
			if took := time.Since(start); took < 80*time.Millisecond || took > 120*time.Millisecond {
				t.Errorf("answered after %v on the fake clock, want one 100ms±20%% backoff", took)
			}
		})
	})
	t.Run("dead worker", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e, f, base := setup(t)
			synctest.Wait() // the router saw the worker up before it died
			f.Close()
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 502 || res.ErrorType() != ErrTypeUpstreamError {
				t.Fatalf("dead worker → %d %s, want 502 upstream_error", res.Status, res.Body)
			}
		})
	})
}

// request_timeout_secs cutting a stream mid-way must not look like a clean
// end to the client (a driver would count a truncated answer as complete).
func TestRequestTimeoutMidStreamCutsTheClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		cfg.RequestTimeoutSecs = 0.3
		r, base := e.router(cfg)
		start := time.Now()
		// The first chunk, then nothing until the deadline.
		res := e.Post(base+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold", "1")
		if res.Err == nil {
			t.Fatalf("a stream cut by request_timeout_secs ended cleanly for the client: %q", res.Body)
		}
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("stream cut after %v on the fake clock, want request_timeout_secs (300ms)", took)
		}
		synctest.Wait()
		if n := testutil.ToFloat64(r.m.errors.WithLabelValues("/v1/completions", ErrTypeUpstreamTimeout)); n != 1 {
			t.Errorf("request_errors_total{error_type=upstream_timeout} = %v, want 1", n)
		}
	})
}

func TestClientErrorsAreRelayedAndNeverTripTheCircuit(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.CircuitBreaker.FailureThreshold = 2
	r, base := e.router(cfg)
	for range 5 {
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "400"); res.Status != 400 {
			t.Fatalf("400 relayed as %d", res.Status)
		}
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Validation", "1"); res.Status != 500 || res.ErrorType() != "BadRequestError" {
			t.Fatalf("validation 500 relayed as %d %s", res.Status, res.Body)
		}
	}
	if st := r.Pool().Get(f.URL).Breaker().State(); st != BreakerClosed {
		t.Fatalf("circuit %v after client errors, want closed", st)
	}
	if n := f.Requests.Load(); n != 10 {
		t.Errorf("worker saw %d requests, want 10 (validation errors are not retried)", n)
	}
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		cfg.CircuitBreaker = CircuitBreakerConfig{FailureThreshold: 3, SuccessThreshold: 2, TimeoutDurationSecs: 30}
		cfg.Retry.Disable = true
		r, base := e.router(cfg)
		f.FailStatus.Store(500)
		for range 3 {
			e.Post(base+"/v1/completions", `{"prompt":"x"}`)
		}
		brk := r.Pool().Get(f.URL).Breaker()
		if brk.State() != BreakerOpen {
			t.Fatalf("state %v after 3 failures, want open", brk.State())
		}
		f.FailStatus.Store(0)
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 503 || res.ErrorType() != ErrTypeNoAvailableWorkers {
			t.Fatalf("open circuit → %d %s, want 503 no_available_workers", res.Status, res.Body)
		}
		if res := e.Get(base + "/readiness"); res.Status != 503 {
			t.Fatalf("readiness with every circuit open: %d", res.Status)
		}
		time.Sleep(30*time.Second - time.Millisecond)
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 503 {
			t.Fatalf("1 ms before timeout_duration_secs → %d, want 503: the circuit half-opened early", res.Status)
		}
		time.Sleep(time.Millisecond)
		for range 2 {
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 200 {
				t.Fatalf("half-open request → %d", res.Status)
			}
		}
		synctest.Wait() // a success is recorded when the relay returns
		if st := brk.State(); st != BreakerClosed {
			t.Fatalf("state %v after 2 half-open successes, want closed", st)
		}
		for _, tr := range [][2]string{{"closed", "open"}, {"open", "half_open"}, {"half_open", "closed"}} {
			if n := testutil.ToFloat64(r.m.cbTransitions.WithLabelValues(f.URL, tr[0], tr[1])); n != 1 {
				t.Errorf("%s→%s transitions = %v, want 1", tr[0], tr[1], n)
			}
		}
	})
}

func TestBackpressureQueueFullAndTimeout(t *testing.T) {
	t.Parallel()
	// One slot, one queue place. The third request meets a full queue, and
	// the queued one is admitted once the slot frees.
	t.Run("queue_full", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e := bubble(t)
			f := e.worker()
			cfg := testConfig("round_robin", f.URL)
			cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 1, 1, 60
			r, base := e.router(cfg)
			held := e.Go(context.Background(), http.MethodPost, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
			synctest.Wait()
			queued := e.Go(context.Background(), http.MethodPost, base+"/v1/completions", `{"prompt":"x"}`)
			synctest.Wait()
			if l, q := r.Loads()[f.URL], r.limiter.waiting.Load(); l != 1 || q != 1 {
				t.Fatalf("load %d with %d queued, want 1 and 1", l, q)
			}
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 429 || res.ErrorType() != ErrTypeQueueFull {
				t.Fatalf("full queue → %d %s, want 429 queue_full", res.Status, res.Body)
			}
			f.Release()
			if res := <-held; res.Status != 200 {
				t.Fatalf("held request → %d %v", res.Status, res.Err)
			}
			if res := <-queued; res.Status != 200 {
				t.Fatalf("queued request → %d %v, want 200 once the slot freed", res.Status, res.Err)
			}
		})
	})
	// The slot stays taken until the queued request has given up, exactly
	// queue_timeout_secs after it arrived.
	t.Run("queue_timeout", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e := bubble(t)
			f := e.worker()
			cfg := testConfig("round_robin", f.URL)
			cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 1, 1, 0.2
			r, base := e.router(cfg)
			held := e.Go(context.Background(), http.MethodPost, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
			synctest.Wait()
			start := time.Now()
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != http.StatusRequestTimeout || res.ErrorType() != ErrTypeQueueTimeout {
				t.Fatalf("queued request → %d %s, want 408 queue_timeout", res.Status, res.Body)
			}
			if took := time.Since(start); took != 200*time.Millisecond {
				t.Errorf("queue timeout after %v on the fake clock, want 200ms", took)
			}
			synctest.Wait()
			if q := r.limiter.waiting.Load(); q != 0 {
				t.Errorf("%d requests still queued", q)
			}
			f.Release()
			if res := <-held; res.Status != 200 {
				t.Fatalf("held request → %d %v", res.Status, res.Err)
			}
		})
	})
}
