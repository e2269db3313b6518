package router

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// runSeriesCount is the number of run_id series of each per-run metric, as
// /metrics exports them.
func runSeriesCount(t *testing.T, e *env, base string) (requests, live int) {
	t.Helper()
	fams := e.scrape(base)
	return len(fams.By("vllm_router_run_requests_total", "run_id")), int(fams.Sum("vllm_router_run_ids", nil))
}

// Every request carrying an X-Run-ID, even one rejected with 400, created
// series that were never removed: 400 requests grew /metrics to 105 MB.
// Rejected requests now create none, and bad ids are refused.
func TestAttackRunIDsOfRejectedRequests(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	// cache_aware reads the prompt text, so the nested prompt below meets
	// the extraction's depth limit; policies that read no text leave field
	// checks to the worker (issue 16) and only check the body is JSON.
	cfg := testConfig("cache_aware", f.URL)
	cfg.MaxPayloadSize = 1 << 10
	r, base := e.router(cfg, WithSecrets(Secrets{APIKey: testClientKey}))
	n := 0
	send := func(method, path, body string, status int, headers ...string) {
		t.Helper()
		n++
		headers = append(headers, RunIDHeader, fmt.Sprintf("rejected-%d", n))
		if res := call(e, method, base+path, body, headers...); res.Status != status {
			t.Errorf("%s %s → %d %s, want %d", method, path, res.Status, res.Body, status)
		}
	}
	send(http.MethodPost, "/v1/completions", `{"prompt":"x"}`, 401)
	send(http.MethodPost, "/v1/completions", `{"prompt":`, 400, clientAuth...)
	send(http.MethodPost, "/v1/completions", `{"prompt":"`+strings.Repeat("x", 2<<10)+`"}`, 413, clientAuth...)
	send(http.MethodGet, "/v1/completions", "", 405, clientAuth...)
	send(http.MethodPost, "/admin/faults", `{}`, 404, clientAuth...)
	send(http.MethodPost, "/v1/completions", `{"prompt":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`, 400, clientAuth...)
	for _, id := range []string{strings.Repeat("r", maxRunIDLen+1), "has space", "quote\"", "new\nline", "ünï"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set("Authorization", "Bearer "+testClientKey)
		req.Header[RunIDHeader] = []string{id}
		resp, err := e.HTTP().Do(req)
		if err != nil {
			continue // net/http refuses to send some of them: fine too
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), RunIDHeader) {
			t.Errorf("run id %q → %d %s, want 400 naming %s", id, resp.StatusCode, body, RunIDHeader)
		}
	}
	if series, live := testutil.CollectAndCount(r.m.runRequests), r.runs.live(); series != 0 || live != 0 {
		t.Errorf("rejected requests left %d run series (%d live run ids)", series, live)
	}
	if f.Requests.Load() != 0 {
		t.Errorf("rejected requests reached the worker")
	}
	// An admitted request is counted.
	if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, append(clientAuth, RunIDHeader, "run-ok")...); res.Status != 200 {
		t.Fatalf("admitted request → %d", res.Status)
	}
	if got := testutil.ToFloat64(r.m.runRequests.WithLabelValues("run-ok")); got != 1 || r.runs.live() != 1 {
		t.Errorf("admitted request counted %v times, %d live run ids", got, r.runs.live())
	}
	stillServes(t, e, r, base, clientAuth...)
}

// Acceptance 3: 10,000 requests with distinct run ids leave exactly
// max_run_ids live runs, the most recent ones, each with its series.
func TestAcceptanceRunSeriesStayAtTheCap(t *testing.T) {
	t.Parallel()
	const total, capRuns = 10000, 50
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.MaxRunIDs = capRuns
	r, base := e.router(cfg)
	id := func(i int) string { return fmt.Sprintf("run-%05d", i) }
	sizeAt := 0
	for i := range total {
		// Sequential: the last capRuns ids are then exactly the survivors.
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, RunIDHeader, id(i)); res.Status != 200 {
			t.Fatalf("request %d → %d %s", i, res.Status, res.Body)
		}
		if i == 2*capRuns {
			sizeAt = len(e.Get(base + "/metrics").Body)
		}
	}
	requests, live := runSeriesCount(t, e, base)
	if requests != capRuns || live != capRuns || r.runs.live() != capRuns {
		t.Fatalf("after %d run ids: %d run_requests_total series, run_ids gauge %d, want %d", total, requests, live, capRuns)
	}
	fams := e.scrape(base)
	byRun := fams.By("vllm_router_run_requests_total", "run_id")
	for i := total - capRuns; i < total; i++ {
		if byRun[id(i)] != 1 {
			t.Fatalf("recent run %s has %v requests, want 1", id(i), byRun[id(i)])
		}
	}
	for _, name := range []string{"vllm_router_run_prompt_tokens_total", "vllm_router_run_completion_tokens_total"} {
		if n := len(fams.By(name, "run_id")); n != capRuns {
			t.Errorf("%s has %d series, want %d (evicted runs must lose every series)", name, n, capRuns)
		}
	}
	// /metrics no longer grows with the number of runs seen.
	size := len(e.Get(base + "/metrics").Body)
	if size > sizeAt+sizeAt/10 {
		t.Errorf("/metrics grew from %d bytes (after %d runs) to %d (after %d)", sizeAt, 2*capRuns, size, total)
	}
	t.Logf("/metrics: %d bytes after %d run ids, %d after %d; %d live runs", sizeAt, 2*capRuns, size, total, live)
	stillServes(t, e, r, base)
}

// bodyOf is an inference body of exactly n bytes.
func bodyOf(n int) string {
	const head, tail = `{"prompt":"`, `"}`
	return head + strings.Repeat("b", n-len(head)-len(tail)) + tail
}

// Acceptance 4 (and the "three 500 MiB uploads" attack): more concurrent
// large bodies than max_body_memory holds. Bodies are reserved before they
// are read, so the bytes held never exceed the budget; the rest wait their
// turn and are served once memory frees up.
func TestAcceptanceBodyMemoryNeverExceedsTheBudget(t *testing.T) {
	t.Parallel()
	const body, budget, clients = 1 << 20, 4 << 20, 12
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.MaxPayloadSize, cfg.MaxBodyMemory, cfg.QueueSize = body, budget, clients
	r, base := e.router(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	answers := make([]<-chan routertest.Response, clients)
	for i := range answers {
		answers[i] = e.goPost(ctx, base+"/v1/completions", bodyOf(body), "X-Fake-Block", "1")
	}
	// Four bodies fit: the worker holds four requests, eight wait for memory.
	routertest.Eventually(t, hangBound, func() error {
		if got, waiting := f.Requests.Load(), r.bodies.waiting.Load(); got != budget/body || waiting != clients-budget/body {
			return fmt.Errorf("worker holds %d requests, %d wait for body memory; want %d and %d", got, waiting, budget/body, clients-budget/body)
		}
		return nil
	})
	if held := r.bodies.held.Load(); held != budget {
		t.Errorf("bytes held %d with four bodies admitted, want %d", held, budget)
	}
	f.Release()
	for i, ch := range answers {
		if res := <-ch; res.Status != 200 {
			t.Fatalf("client %d → %d %s %v", i, res.Status, res.Body, res.Err)
		}
	}
	routertest.WaitLoadsZero(t, r)
	fams := e.scrape(base)
	peak, held := fams.Sum("vllm_router_body_buffer_peak_bytes", nil), fams.Sum("vllm_router_body_buffer_bytes", nil)
	if peak > budget || peak < budget {
		t.Errorf("peak body bytes %v, want exactly the budget %d (never more; full while clients waited)", peak, budget)
	}
	if held != 0 {
		t.Errorf("body bytes still held after every request ended: %v", held)
	}
	if n := f.Requests.Load(); n != clients {
		t.Errorf("worker served %d of %d requests", n, clients)
	}
	stillServes(t, e, r, base)
}

// A body without Content-Length grows its reservation as it arrives and is
// refused (429) rather than waited for when memory is taken; a body
// declaring more than max_payload_size is refused before a byte is read.
func TestChunkedBodiesAndOversizeAreBounded(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.MaxPayloadSize, cfg.MaxBodyMemory = 2*mib, 4*mib
	r, base := e.router(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	var held []<-chan routertest.Response
	for range 3 {
		held = append(held, e.goPost(ctx, base+"/v1/completions", bodyOf(mib), "X-Fake-Block", "1"))
	}
	routertest.Eventually(t, hangBound, func() error {
		if n := f.Requests.Load(); n != 3 {
			return fmt.Errorf("worker holds %d requests, want 3", n)
		}
		return nil
	})
	chunked := func(n int) int {
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, bodyOf(n))
			_ = pw.Close()
		}()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", pr)
		resp, err := e.HTTP().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := chunked(2 * mib); status != 429 {
		t.Errorf("chunked 2 MiB body with 1 MiB free → %d, want 429", status)
	}
	if peak := r.bodies.peak.Load(); peak > 4*mib {
		t.Errorf("peak %d over the budget", peak)
	}
	if res := e.Post(base+"/v1/completions", bodyOf(2*mib+1)); res.Status != 413 || res.ErrorType() != ErrTypePayloadTooLarge {
		t.Errorf("oversize body → %d %s, want 413", res.Status, res.Body)
	}
	f.Release()
	for _, ch := range held {
		if res := <-ch; res.Status != 200 {
			t.Fatalf("held request → %d", res.Status)
		}
	}
	if status := chunked(2 * mib); status != 200 {
		t.Errorf("chunked 2 MiB body with memory free → %d, want 200", status)
	}
	if status := chunked(2*mib + 1); status != 413 {
		t.Errorf("chunked body over max_payload_size → %d, want 413", status)
	}
	routertest.WaitLoadsZero(t, r)
	if h := r.bodies.held.Load(); h != 0 {
		t.Errorf("body bytes held after the requests: %d", h)
	}
	stillServes(t, e, r, base)
}
