package router

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// Regression tests for the load-accounting bugs router.md lists for other
// routers. The router's cleanup (routertest.ServeOn) also asserts every load
// is back to 0. Most run in synctest bubbles: synctest.Wait returns once
// every handler has settled, so a load is read when it is final instead of
// polled for.

// goPost is a background POST; the channel yields the answer.
func (e *env) goPost(ctx context.Context, url, body string, headers ...string) <-chan routertest.Response {
	return e.Go(ctx, http.MethodPost, url, body, headers...)
}

func wantLoads(t *testing.T, r *Router, want map[string]int64) {
	t.Helper()
	got := r.Loads()
	for u, n := range want {
		if got[u] != n {
			t.Fatalf("loads %v, want %v", got, want)
		}
	}
}

// vr issue 179: pass-through routes never counted load.
func TestPassthroughCountsLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		r, base := e.router(testConfig("cache_aware", f.URL))
		done := e.goPost(context.Background(), base+"/tokenize", `{"prompt":"x"}`, "X-Fake-Block", "1")
		synctest.Wait()
		wantLoads(t, r, map[string]int64{f.URL: 1})
		f.Release()
		if res := <-done; res.Status != 200 {
			t.Fatalf("pass-through status %d %v", res.Status, res.Err)
		}
		synctest.Wait()
		wantLoads(t, r, map[string]int64{f.URL: 0})
	})
}

// PI load_tracking_test: a retryable 5xx decremented twice, stealing from
// other in-flight requests.
func TestRetryableFailureReleasesOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		bad, good := e.worker(), e.worker()
		bad.FailStatus.Store(503)
		r, base := e.router(testConfig("round_robin", bad.URL, good.URL))
		// Several requests each fail on bad, retry onto good and stay there.
		var dones []<-chan routertest.Response
		for range 4 {
			dones = append(dones, e.goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1"))
		}
		time.Sleep(time.Second) // past every retry's backoff (≤ 5 ms) on the fake clock
		synctest.Wait()
		wantLoads(t, r, map[string]int64{good.URL: 4, bad.URL: 0})
		good.Release()
		for _, d := range dones {
			if res := <-d; res.Status != 200 {
				t.Fatalf("status %d %v", res.Status, res.Err)
			}
		}
		if n := testutil.ToFloat64(r.m.retries.WithLabelValues("/v1/completions")); n < 2 {
			t.Errorf("retries_total = %v, want the failures to have been retried", n)
		}
	})
}

// vr PR 215: a client disconnect between increment and decrement leaked a
// count. Covers a cancel while waiting for headers and one mid-stream; the
// router must also cancel the upstream request.
func TestClientCancelReleasesAndPropagates(t *testing.T) {
	t.Parallel()
	for _, hold := range []string{"X-Fake-Block", "X-Fake-Hold"} {
		t.Run(hold, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e := bubble(t)
				f := e.worker()
				r, base := e.router(testConfig("least_loaded", f.URL))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				body := `{"prompt":"x","stream":true}`
				if hold == "X-Fake-Block" {
					// Cancel while the router waits for the worker's headers.
					got := e.goPost(ctx, base+"/v1/completions", body, hold, "1")
					synctest.Wait()
					wantLoads(t, r, map[string]int64{f.URL: 1})
					cancel()
					if res := <-got; res.Err == nil {
						t.Fatalf("cancelled request answered %d", res.Status)
					}
				} else {
					// Cancel mid-stream, after the first chunk arrived.
					resp, err := e.Send(ctx, http.MethodPost, base+"/v1/completions", body, hold, "1")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
						t.Fatal(err)
					}
					wantLoads(t, r, map[string]int64{f.URL: 1})
					cancel()
					resp.Body.Close()
				}
				synctest.Wait()
				wantLoads(t, r, map[string]int64{f.URL: 0})
				if n := f.Cancelled.Load(); n != 1 {
					t.Errorf("worker saw %d cancellations, want 1", n)
				}
			})
		})
	}
}

// Review of vr PR 180: an unsupported method incremented load and returned
// 405 without decrementing. Here validation precedes selection entirely.
func TestUnsupportedMethodNeverTouchesLoad(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	r, base := e.router(testConfig("round_robin", f.URL))
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		if res := e.Call(context.Background(), m, base+"/v1/completions", ""); res.Status != http.StatusMethodNotAllowed {
			t.Fatalf("%s → %d, want 405", m, res.Status)
		}
	}
	if n := testutil.ToFloat64(r.m.processed.WithLabelValues(f.URL)); n != 0 {
		t.Errorf("processed_requests_total = %v for rejected methods", n)
	}
}

// vr issue 197: a health checker that "fixed" drift by zeroing counts also
// zeroed live requests. Loads must survive any number of health rounds.
func TestHealthChecksNeverResetLoads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		cfg.HealthCheck.IntervalSecs, cfg.HealthCheck.TimeoutSecs = 1, 1
		r, base := e.router(cfg)
		done := e.goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
		synctest.Wait()
		before := f.Probes.Load()
		time.Sleep(5 * time.Second) // five intervals on the fake clock
		synctest.Wait()
		if n := f.Probes.Load() - before; n != 5 {
			t.Fatalf("%d health probes in 5 intervals, want 5", n)
		}
		wantLoads(t, r, map[string]int64{f.URL: 1})
		f.Release()
		<-done
	})
}

// vr issue 174: power_of_two compared zeros when only cache_aware tracked
// load. With a request held on one worker, every new request goes to the other.
func TestPowerOfTwoSeesRealLoads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		a, b := e.worker(), e.worker()
		r, base := e.router(testConfig("power_of_two", a.URL, b.URL))
		done := e.goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
		synctest.Wait()
		busy, idle := a, b
		if r.Loads()[b.URL] == 1 {
			busy, idle = b, a
		}
		wantLoads(t, r, map[string]int64{busy.URL: 1, idle.URL: 0})
		before := idle.Requests.Load()
		for range 10 {
			if res := e.Post(base+"/v1/completions", `{"prompt":"y"}`); res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			// The answer's load is released when its relay returns, a moment
			// after the client read it; a leftover 1 would tie with the held
			// request and let power_of_two pick either.
			synctest.Wait()
		}
		if got := idle.Requests.Load() - before; got != 10 {
			t.Errorf("idle worker got %d of 10 requests; power_of_two ignored the held load", got)
		}
		busy.Release()
		<-done
	})
}

// A worker removed mid-stream keeps its load visible until the stream ends,
// then drops out; re-adding it while draining keeps the count exact.
func TestWorkerRemovedMidStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		r, base := e.router(testConfig("round_robin", f.URL), withAdmin())
		done := e.goPost(context.Background(), base+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold", "1")
		synctest.Wait()
		wantLoads(t, r, map[string]int64{f.URL: 1})
		if res := e.Call(context.Background(), http.MethodDelete, base+"/workers/"+url.PathEscape(f.URL), "", adminAuth...); res.Status != 200 {
			t.Fatalf("DELETE /workers → %d", res.Status)
		}
		if r.Pool().Get(f.URL) != nil || r.Loads()[f.URL] != 1 {
			t.Fatalf("after removal: member=%v loads=%v; want gone from the pool, load still 1", r.Pool().Get(f.URL) != nil, r.Loads())
		}
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 503 || res.ErrorType() != ErrTypeNoAvailableWorkers {
			t.Fatalf("empty pool → %d %s", res.Status, res.Body)
		}
		// Re-adding while the stream drains picks up the live count.
		r.Pool().Add(f.URL)
		wantLoads(t, r, map[string]int64{f.URL: 1})
		f.Release()
		if res := <-done; res.Status != 200 {
			t.Fatalf("stream status %d %v", res.Status, res.Err)
		}
		synctest.Wait()
		wantLoads(t, r, map[string]int64{f.URL: 0})
	})
}
