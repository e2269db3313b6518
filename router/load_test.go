package router

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Regression tests for the load-accounting bugs router.md lists for other
// routers. startRouter's cleanup also asserts every load is back to 0.

// waitLoad polls until url's load equals want.
func waitLoad(t *testing.T, r *Router, url string, want int64) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		if got := r.Loads()[url]; got != want {
			return fmt.Errorf("load of %s = %d, want %d", url, got, want)
		}
		return nil
	})
}

// goPost sends a request in the background; the returned channel yields its status.
func goPost(ctx context.Context, url, body string, headers ...string) <-chan int {
	ch := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- 0
			return
		}
		_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
		resp.Body.Close()
		ch <- resp.StatusCode
	}()
	return ch
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// vr issue 179: pass-through routes never counted load.
func TestPassthroughCountsLoad(t *testing.T) {
	f := newFakeWorker(t)
	r, base := startRouter(t, testConfig("cache_aware", f.URL))
	done := goPost(context.Background(), base+"/tokenize", `{"prompt":"x"}`, "X-Fake-Block", "1")
	waitLoad(t, r, f.URL, 1)
	f.release()
	if s := <-done; s != 200 {
		t.Fatalf("pass-through status %d", s)
	}
	waitLoad(t, r, f.URL, 0)
}

// PI load_tracking_test: a retryable 5xx decremented twice, stealing from
// other in-flight requests.
func TestRetryableFailureReleasesOnce(t *testing.T) {
	bad, good := newFakeWorker(t), newFakeWorker(t)
	bad.failStatus.Store(503)
	r, base := startRouter(t, testConfig("round_robin", bad.URL, good.URL))
	// Several requests each fail on bad, retry onto good and stay there.
	var dones []<-chan int
	for range 4 {
		dones = append(dones, goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1"))
	}
	waitLoad(t, r, good.URL, 4)
	if got := r.Loads()[bad.URL]; got != 0 {
		t.Fatalf("failed worker's load = %d after retries, want exactly 0", got)
	}
	good.release()
	for _, d := range dones {
		if s := <-d; s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	if n := testutil.ToFloat64(r.m.retries.WithLabelValues("/v1/completions")); n < 2 {
		t.Errorf("retries_total = %v, want the failures to have been retried", n)
	}
}

// vr PR 215: a client disconnect between increment and decrement leaked a
// count. Covers a cancel while waiting for headers and one mid-stream; the
// router must also cancel the upstream request.
func TestClientCancelReleasesAndPropagates(t *testing.T) {
	for _, hold := range []string{"X-Fake-Block", "X-Fake-Hold"} {
		t.Run(hold, func(t *testing.T) {
			f := newFakeWorker(t)
			r, base := startRouter(t, testConfig("least_loaded", f.URL))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","stream":true}`))
			req.Header.Set(hold, "1")
			if hold == "X-Fake-Block" {
				// Cancel while the router waits for the worker's headers.
				got := make(chan error, 1)
				go func() {
					resp, err := http.DefaultClient.Do(req)
					if err == nil {
						resp.Body.Close()
					}
					got <- err
				}()
				waitLoad(t, r, f.URL, 1)
				cancel()
				<-got
			} else {
				// Cancel mid-stream, after the first chunk arrived.
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
				if got := r.Loads()[f.URL]; got != 1 {
					t.Fatalf("load mid-stream = %d, want 1", got)
				}
				cancel()
				resp.Body.Close()
			}
			waitLoad(t, r, f.URL, 0)
			eventually(t, 5*time.Second, func() error {
				if f.cancelled.Load() != 1 {
					return fmt.Errorf("worker saw %d cancellations, want 1", f.cancelled.Load())
				}
				return nil
			})
		})
	}
}

// Review of vr PR 180: an unsupported method incremented load and returned
// 405 without decrementing. Here validation precedes selection entirely.
func TestUnsupportedMethodNeverTouchesLoad(t *testing.T) {
	f := newFakeWorker(t)
	r, base := startRouter(t, testConfig("round_robin", f.URL))
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, base+"/v1/completions", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s → %d, want 405", m, resp.StatusCode)
		}
	}
	if n := testutil.ToFloat64(r.m.processed.WithLabelValues(f.URL)); n != 0 {
		t.Errorf("processed_requests_total = %v for rejected methods", n)
	}
}

// vr issue 197: a health checker that "fixed" drift by zeroing counts also
// zeroed live requests. Loads must survive any number of health rounds.
func TestHealthChecksNeverResetLoads(t *testing.T) {
	f := newFakeWorker(t)
	r, base := startRouter(t, testConfig("round_robin", f.URL))
	done := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
	waitLoad(t, r, f.URL, 1)
	start := f.probes.Load()
	eventually(t, 5*time.Second, func() error {
		if f.probes.Load() < start+5 {
			return fmt.Errorf("only %d health probes so far", f.probes.Load()-start)
		}
		return nil
	})
	if got := r.Loads()[f.URL]; got != 1 {
		t.Fatalf("load after 5 health rounds = %d, want 1", got)
	}
	f.release()
	<-done
}

// vr issue 174: power_of_two compared zeros when only cache_aware tracked
// load. With a request held on one worker, every new request goes to the other.
func TestPowerOfTwoSeesRealLoads(t *testing.T) {
	a, b := newFakeWorker(t), newFakeWorker(t)
	r, base := startRouter(t, testConfig("power_of_two", a.URL, b.URL))
	done := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x"}`, "X-Fake-Block", "1")
	eventually(t, 5*time.Second, func() error {
		if r.Loads()[a.URL]+r.Loads()[b.URL] != 1 {
			return fmt.Errorf("loads %v", r.Loads())
		}
		return nil
	})
	busy, idle := a, b
	if r.Loads()[b.URL] == 1 {
		busy, idle = b, a
	}
	before := idle.requests.Load()
	for range 10 {
		// The previous answer's load is released when its relay returns, a
		// moment after the client read it; a leftover 1 would tie with the
		// held request and let power_of_two pick either.
		waitLoad(t, r, idle.URL, 0)
		if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"y"}`); s != 200 {
			t.Fatalf("status %d: %s", s, body)
		}
	}
	if got := idle.requests.Load() - before; got != 10 {
		t.Errorf("idle worker got %d of 10 requests; power_of_two ignored the held load", got)
	}
	busy.release()
	<-done
}

// A worker removed mid-stream keeps its load visible until the stream ends,
// then drops out; re-adding it while draining keeps the count exact.
func TestWorkerRemovedMidStream(t *testing.T) {
	f := newFakeWorker(t)
	r, base := startRouter(t, testConfig("round_robin", f.URL))
	done := goPost(context.Background(), base+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold", "1")
	waitLoad(t, r, f.URL, 1)
	req, _ := http.NewRequest(http.MethodDelete, base+"/workers/"+url.PathEscape(f.URL), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("DELETE /workers → %d", resp.StatusCode)
	}
	if r.Pool().Get(f.URL) != nil || r.Loads()[f.URL] != 1 {
		t.Fatalf("after removal: member=%v loads=%v; want gone from the pool, load still 1", r.Pool().Get(f.URL) != nil, r.Loads())
	}
	if s, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`); s != 503 || errorType(t, body) != ErrTypeNoAvailableWorkers {
		t.Fatalf("empty pool → %d %s", s, body)
	}
	// Re-adding while the stream drains picks up the live count.
	r.Pool().Add(f.URL)
	if got := r.Loads()[f.URL]; got != 1 {
		t.Fatalf("re-added worker load = %d, want 1", got)
	}
	f.release()
	if s := <-done; s != 200 {
		t.Fatalf("stream status %d", s)
	}
	waitLoad(t, r, f.URL, 0)
}
