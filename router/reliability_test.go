package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSaturatedWorkersGivePoolExhausted(t *testing.T) {
	a, b := newFakeWorker(t), newFakeWorker(t)
	a.failStatus.Store(429)
	b.failStatus.Store(503)
	cfg := testConfig("round_robin", a.URL, b.URL)
	cfg.Retry.MaxRetries = 3
	cfg.CircuitBreaker.FailureThreshold = 100
	r, base := startRouter(t, cfg)
	status, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`)
	if status != 503 || errorType(t, body) != ErrTypePoolExhausted {
		t.Fatalf("got %d %s, want 503 pool_exhausted", status, body)
	}
	var e struct {
		Error struct {
			Retries      int `json:"retries"`
			PoolSize     int `json:"pool_size"`
			OpenCircuits int `json:"open_circuits"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Retries != 3 || e.Error.PoolSize != 2 || e.Error.OpenCircuits != 0 {
		t.Fatalf("pool_exhausted details %+v (%v), want retries 3, pool_size 2, open_circuits 0", e.Error, err)
	}
	if a.requests.Load()+b.requests.Load() != 3 {
		t.Errorf("attempts reached workers %d times, want 3", a.requests.Load()+b.requests.Load())
	}
	if n := testutil.ToFloat64(r.m.retriesExhausted.WithLabelValues("/v1/completions")); n != 1 {
		t.Errorf("retries_exhausted_total = %v", n)
	}
}

func TestUpstreamErrorAndTimeoutTypes(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.RequestTimeoutSecs = 0.2
	cfg.Retry.MaxRetries = 2
	_, base := startRouter(t, cfg)
	if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Sleep", "5000"); s != 504 || errorType(t, body) != ErrTypeUpstreamTimeout {
		t.Fatalf("slow worker → %d %s, want 504 upstream_timeout", s, body)
	}
	if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "502"); s != 502 || errorType(t, body) != ErrTypeUpstreamError {
		t.Fatalf("502 worker → %d %s, want 502 upstream_error", s, body)
	}
	f.Close()
	if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != 502 || errorType(t, body) != ErrTypeUpstreamError {
		t.Fatalf("dead worker → %d %s, want 502 upstream_error", s, body)
	}
}

// request_timeout_secs cutting a stream mid-way must not look like a clean
// end to the client (a driver would count a truncated answer as complete).
func TestRequestTimeoutMidStreamCutsTheClient(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.RequestTimeoutSecs = 0.3
	r, base := startRouter(t, cfg)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","stream":true}`))
	req.Header.Set("X-Fake-Hold", "1") // first chunk, then nothing until the deadline
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("a stream cut by request_timeout_secs ended cleanly for the client: %q", b)
	}
	eventually(t, 5*time.Second, func() error {
		if n := testutil.ToFloat64(r.m.errors.WithLabelValues("/v1/completions", ErrTypeUpstreamTimeout)); n != 1 {
			return fmt.Errorf("request_errors_total{error_type=upstream_timeout} = %v, want 1", n)
		}
		return nil
	})
}

func TestClientErrorsAreRelayedAndNeverTripTheCircuit(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.CircuitBreaker.FailureThreshold = 2
	r, base := startRouter(t, cfg)
	for range 5 {
		if s, _, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Status", "400"); s != 400 {
			t.Fatalf("400 relayed as %d", s)
		}
		if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Validation", "1"); s != 500 || errorType(t, body) != "BadRequestError" {
			t.Fatalf("validation 500 relayed as %d %s", s, body)
		}
	}
	if st := r.Pool().Get(f.URL).Breaker().State(); st != BreakerClosed {
		t.Fatalf("circuit %v after client errors, want closed", st)
	}
	if n := f.requests.Load(); n != 10 {
		t.Errorf("worker saw %d requests, want 10 (validation errors are not retried)", n)
	}
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.CircuitBreaker = CircuitBreakerConfig{FailureThreshold: 3, SuccessThreshold: 2, TimeoutDurationSecs: 30}
	cfg.Retry.Disable = true
	r, base := startRouter(t, cfg, WithClock(clock))
	f.failStatus.Store(500)
	for range 3 {
		post(t, base+"/v1/completions", `{"prompt":"x"}`)
	}
	brk := r.Pool().Get(f.URL).Breaker()
	if brk.State() != BreakerOpen {
		t.Fatalf("state %v after 3 failures, want open", brk.State())
	}
	f.failStatus.Store(0)
	if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != 503 || errorType(t, body) != ErrTypeNoAvailableWorkers {
		t.Fatalf("open circuit → %d %s, want 503 no_available_workers", s, body)
	}
	if resp, err := http.Get(base + "/readiness"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("readiness with every circuit open: %v %v", resp.StatusCode, err)
	}
	advance(31 * time.Second)
	for range 2 {
		if s, _, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != 200 {
			t.Fatalf("half-open request → %d", s)
		}
	}
	// A success is recorded when the relay returns, which can be a moment
	// after the client read the whole answer.
	eventually(t, 5*time.Second, func() error {
		if st := brk.State(); st != BreakerClosed {
			return fmt.Errorf("state %v after 2 half-open successes, want closed", st)
		}
		return nil
	})
	if n := testutil.ToFloat64(r.m.cbTransitions.WithLabelValues(f.URL, "closed", "open")); n != 1 {
		t.Errorf("closed→open transitions = %v", n)
	}
}

func TestBackpressureQueueFullAndTimeout(t *testing.T) {
	// One slot, one queue place. With a queue timeout far beyond the test,
	// the third request meets a full queue however slowly this test runs,
	// and the queued one is admitted once the slot frees.
	t.Run("queue_full", func(t *testing.T) {
		f := newFakeWorker(t)
		cfg := testConfig("round_robin", f.URL)
		cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 1, 1, 60
		r, base := startRouter(t, cfg)
		held := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
		waitLoad(t, r, f.URL, 1)
		queued := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`)
		waitQueued(t, r, 1)
		if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != 429 || errorType(t, body) != ErrTypeQueueFull {
			t.Fatalf("full queue → %d %s, want 429 queue_full", s, body)
		}
		f.release()
		if s := <-held; s != 200 {
			t.Fatalf("held request → %d", s)
		}
		if s := <-queued; s != 200 {
			t.Fatalf("queued request → %d, want 200 once the slot freed", s)
		}
	})
	// The slot stays taken until the queued request has given up.
	t.Run("queue_timeout", func(t *testing.T) {
		f := newFakeWorker(t)
		cfg := testConfig("round_robin", f.URL)
		cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 1, 1, 0.2
		r, base := startRouter(t, cfg)
		held := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
		waitLoad(t, r, f.URL, 1)
		if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != http.StatusRequestTimeout || errorType(t, body) != ErrTypeQueueTimeout {
			t.Fatalf("queued request → %d %s, want 408 queue_timeout", s, body)
		}
		waitQueued(t, r, 0)
		f.release()
		if s := <-held; s != 200 {
			t.Fatalf("held request → %d", s)
		}
	})
}

// waitQueued polls until n requests wait in the backpressure queue.
func waitQueued(t *testing.T, r *Router, n int64) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		if got := r.limiter.waiting.Load(); got != n {
			return fmt.Errorf("%d requests queued, want %d", got, n)
		}
		return nil
	})
}
