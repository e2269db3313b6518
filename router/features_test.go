package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/routertest"
)

func TestRunAccountingFromUsage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		r, base := e.router(testConfig("round_robin", f.URL))
		e.Post(base+"/v1/completions", `{"prompt":"x"}`, RunIDHeader, "run-a")               // usage 7/3
		e.Post(base+"/v1/completions", `{"prompt":"x","stream":true}`, RunIDHeader, "run-a") // usage chunk 5/3
		e.Post(base+"/v1/completions", `{"prompt":"x"}`, RunIDHeader, "run-b", "X-Fake-Status", "400")
		e.Post(base+"/v1/completions", `{"prompt":"x"}`) // no run id: not counted
		// The handler records per-run counters when it returns, which can be
		// a moment after the client read the last byte.
		synctest.Wait()
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"run-a requests", testutil.ToFloat64(r.m.runRequests.WithLabelValues("run-a")), 2},
			{"run-a prompt", testutil.ToFloat64(r.m.runPrompt.WithLabelValues("run-a")), 12},
			{"run-a completion", testutil.ToFloat64(r.m.runCompletion.WithLabelValues("run-a")), 6},
			{"run-b requests", testutil.ToFloat64(r.m.runRequests.WithLabelValues("run-b")), 1},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		if n := testutil.CollectAndCount(r.m.runRequests); n != 2 {
			t.Errorf("%d run_id series, want 2", n)
		}
	})
}

func TestUsageTapSplitsAcrossWrites(t *testing.T) {
	t.Parallel()
	stream := "data: {\"choices\":[{\"text\":\"usage\"}],\"usage\":null}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4}}\r\n\r\ndata: [DONE]\n\n"
	for cut := 1; cut < len(stream); cut += 7 {
		tap := newUsageTap("text/event-stream; charset=utf-8")
		_, _ = tap.Write([]byte(stream[:cut])) // never fails
		_, _ = tap.Write([]byte(stream[cut:]))
		if u := tap.Usage(); u == nil || u.PromptTokens != 11 || u.CompletionTokens != 4 {
			t.Fatalf("cut %d: usage %+v", cut, u)
		}
	}
}

func TestDataParallelRanks(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.IntraNodeDataParallelSize = 3
	r, base := e.router(cfg)
	seen := map[string]int{}
	for range 6 {
		e.Post(base+"/v1/completions", `{"prompt":"x"}`)
		seen[f.LastHeader().Get(DPRankHeader)]++
	}
	if seen["0"] != 2 || seen["1"] != 2 || seen["2"] != 2 {
		t.Fatalf("ranks seen %v, want 2 each of 0, 1, 2", seen)
	}
	ws := r.Workers().Workers
	if len(ws) != 1 || len(ws[0].RankLoads) != 3 {
		t.Fatalf("GET /workers shape %+v", ws)
	}
	if n := testutil.ToFloat64(r.m.decisions.WithLabelValues("round_robin", f.URL+"@1")); n != 2 {
		t.Errorf("decisions for rank 1 = %v", n)
	}
}

func TestConsistentHashBySession(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := urlsOf(e.worker(), e.worker(), e.worker())
	_, base := e.router(testConfig("consistent_hash", ws...))
	servedBy := func(session string) string {
		res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Session-ID", session)
		var body struct {
			ServedBy string `json:"served_by"`
		}
		_ = json.Unmarshal([]byte(res.Body), &body)
		return body.ServedBy
	}
	owners := map[string]bool{}
	for i := range 30 {
		s := fmt.Sprint("session-", i)
		first := servedBy(s)
		for range 3 {
			if again := servedBy(s); again != first {
				t.Fatalf("session %s moved from %s to %s", s, first, again)
			}
		}
		owners[first] = true
	}
	if len(owners) < 2 {
		t.Errorf("30 sessions all went to %v", owners)
	}
}

func TestAdminAndPublicRoutes(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	a, b := e.worker(), e.worker()
	r, base := e.router(testConfig("round_robin", a.URL), withAdmin())
	del := func(path string) int {
		return e.Call(context.Background(), http.MethodDelete, base+path, "", adminAuth...).Status
	}
	if res := e.Get(base + "/liveness"); res.Status != 200 {
		t.Errorf("liveness %d", res.Status)
	}
	if res := e.Get(base + "/readiness"); res.Status != 200 || !strings.Contains(res.Body, `"healthy_workers":1`) {
		t.Errorf("readiness %d %s", res.Status, res.Body)
	}
	if res := e.Get(base + "/v1/models"); res.Status != 200 || !strings.Contains(res.Body, `"id":"m"`) {
		t.Errorf("models %d %s", res.Status, res.Body)
	}
	if res := e.Post(base+"/workers", fmt.Sprintf(`{"url":%q}`, b.URL), adminAuth...); res.Status != 201 {
		t.Fatalf("POST /workers: %d %s", res.Status, res.Body)
	}
	if res := e.Post(base+"/workers", `{"url":"ftp://x"}`, adminAuth...); res.Status != 400 || res.ErrorType() != ErrTypeInvalidRequest {
		t.Errorf("bad worker url: %d %s, want 400 invalid_request", res.Status, res.Body)
	}
	var list WorkersResponse
	get := func(path string) routertest.Response {
		return e.Call(context.Background(), http.MethodGet, base+path, "", adminAuth...)
	}
	res := get("/workers")
	if err := json.Unmarshal([]byte(res.Body), &list); err != nil || len(list.Workers) != 2 || list.LoadSignal != LoadSignalInFlight || list.Policy != "round_robin" {
		t.Fatalf("GET /workers = %s (%v)", res.Body, err)
	}
	// Unescaped URL in the path works too.
	if s := del("/workers/" + a.URL); s != 200 {
		t.Fatalf("DELETE unescaped: %d", s)
	}
	if res := get("/get_loads"); !strings.Contains(res.Body, b.URL) || strings.Contains(res.Body, a.URL) {
		t.Errorf("get_loads after removal: %s", res.Body)
	}
	if r.Pool().Get(a.URL) != nil {
		t.Error("worker still in pool after DELETE")
	}
	if s := del("/workers/http%3A%2F%2F127.0.0.1%3A1"); s != 404 {
		t.Errorf("DELETE unknown worker → %d, want 404", s)
	}
	// Every vllm_router_ name from router.md is exposed.
	e.Post(base+"/v1/completions", `{"prompt":"x"}`)
	metrics := get("/metrics").Body
	for _, name := range []string{"requests_total", "request_duration_seconds", "processed_requests_total", "policy_decisions_total",
		"worker_load", "running_requests", "worker_health", "cb_state", "active_workers", "max_load", "min_load", "load_signal", "cb_outcomes_total"} {
		if !strings.Contains(metrics, "vllm_router_"+name) {
			t.Errorf("/metrics lacks vllm_router_%s", name)
		}
	}
}

func TestTwoRoutersInOneProcess(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	r1, base1 := e.router(testConfig("round_robin", f.URL))
	r2, _ := e.router(testConfig("random", f.URL))
	e.Post(base1+"/v1/completions", `{"prompt":"x"}`)
	if a, b := testutil.ToFloat64(r1.m.processed.WithLabelValues(f.URL)), testutil.ToFloat64(r2.m.processed.WithLabelValues(f.URL)); a != 1 || b != 0 {
		t.Fatalf("metrics leaked between routers: %v %v", a, b)
	}
}

func TestStreamingPassesThroughFlushed(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	_, base := e.router(testConfig("round_robin", f.URL))
	res := e.Post(base+"/v1/completions", `{"prompt":"x","stream":true}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	if res.Err != nil || !strings.HasSuffix(res.Body, "data: [DONE]\n\n") || strings.Count(res.Body, "data: ") != 5 {
		t.Fatalf("stream altered (%v): %q", res.Err, res.Body)
	}
}

// A stream's headers reach the client when the worker sends them, before
// its first event: once everything has settled, the client holds the
// response while the worker still holds its first event.
func TestStreamHeadersRelayedBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		_, base := e.router(testConfig("round_robin", f.URL))
		headers := make(chan http.Header, 1) // nil if the request failed
		body := make(chan string, 1)
		go func() {
			defer close(body)
			resp, err := e.Send(context.Background(), http.MethodPost, base+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Hold-First", "1")
			if err != nil {
				t.Error(err)
				headers <- nil
				return
			}
			defer resp.Body.Close()
			headers <- resp.Header
			if b, err := io.ReadAll(resp.Body); err == nil {
				body <- string(b)
			}
		}()
		synctest.Wait()
		var h http.Header
		select {
		case h = <-headers:
		default:
			f.Release()
			<-body
			t.Fatal("no headers while the worker holds its first event: the router held them back")
		}
		f.Release()
		b := <-body
		if h == nil {
			t.FailNow()
		}
		if h.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(b, "data: [DONE]\n\n") {
			t.Fatalf("stream %q with content type %q", b, h.Get("Content-Type"))
		}
	})
}

// The in_flight+queue signal scrapes each worker's queue depth at start and
// every load_check_interval_secs, and least_loaded follows it.
func TestQueueBlendedLoadSignal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		queued, idle := e.worker(), e.worker()
		queued.Waiting.Store(7)
		cfg := testConfig("least_loaded", queued.URL, idle.URL)
		cfg.LoadSignal, cfg.LoadCheckIntervalSecs = LoadSignalInFlightQueue, 2
		r, base := e.router(cfg)
		synctest.Wait() // the scrape at start has landed
		if st := r.Workers(); st.Workers[0].Queue+st.Workers[1].Queue != 7 {
			t.Fatalf("queue depths after the first scrape: %+v", st.Workers)
		}
		for range 6 {
			e.Post(base+"/v1/completions", `{"prompt":"x"}`)
		}
		if n := queued.Requests.Load(); n != 0 {
			t.Errorf("least_loaded sent %d requests to the worker with 7 queued", n)
		}
		m := e.Get(base + "/metrics").Body
		if !strings.Contains(m, `vllm_router_load_signal{signal="in_flight+queue"} 1`) ||
			!strings.Contains(m, fmt.Sprintf("vllm_router_worker_load{worker=%q} 7", queued.URL)) {
			t.Errorf("metrics do not report the blended signal:\n%s", m)
		}
		// The next scrape comes exactly one interval later.
		queued.Waiting.Store(0)
		idle.Waiting.Store(3)
		time.Sleep(2*time.Second - time.Millisecond)
		synctest.Wait()
		if q := r.Pool().Get(queued.URL).queue.Load(); q != 7 {
			t.Fatalf("queue depth %d before the interval passed, want the old 7", q)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if q, i := r.Pool().Get(queued.URL).queue.Load(), r.Pool().Get(idle.URL).queue.Load(); q != 0 || i != 3 {
			t.Fatalf("queue depths %d and %d after one interval, want 0 and 3", q, i)
		}
	})
}

func TestWorkerBreakMidStreamIsVisibleToClient(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	r, base := e.router(testConfig("round_robin", f.URL))
	if res := e.Post(base+"/v1/completions", `{"prompt":"x","stream":true}`, "X-Fake-Break", "1"); res.Err == nil {
		t.Fatal("a stream the worker broke off ended cleanly for the client")
	}
	if n := testutil.ToFloat64(r.m.cbOutcomes.WithLabelValues(f.URL, "failure")); n != 1 {
		t.Errorf("breaker failures = %v, want the broken stream counted", n)
	}
}

func TestRemovingWorkerPrunesCacheTree(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	a, b := e.worker(), e.worker()
	r, base := e.router(testConfig("cache_aware", a.URL, b.URL))
	for i := range 4 {
		e.Post(base+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"%d: a distinct prompt"}`, i))
	}
	sizes := r.Pool().Policy().(policy.Sizer).Sizes()
	if sizes[a.URL] == 0 || sizes[b.URL] == 0 {
		t.Fatalf("tree sizes %v: want both workers holding text", sizes)
	}
	r.Pool().Remove(a.URL)
	if sizes := r.Pool().Policy().(policy.Sizer).Sizes(); sizes[a.URL] != 0 || sizes[b.URL] == 0 {
		t.Fatalf("after removing %s tree sizes are %v", a.URL, sizes)
	}
}

// TestTreeBytesMetricFollowsTheCap checks vllm_router_tree_bytes: it rises
// with the text routed under cache_aware and never exceeds max_tree_size,
// which counts bytes held.
func TestTreeBytesMetricFollowsTheCap(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	a := e.worker()
	cfg := testConfig("cache_aware", a.URL)
	cfg.MaxTreeSize = 16 << 10
	_, base := e.router(cfg)
	treeBytes := func() float64 {
		return e.scrape(base).Sum("vllm_router_tree_bytes", map[string]string{"pool": "default"})
	}
	if n := treeBytes(); n != 0 {
		t.Fatalf("tree_bytes = %v before any request", n)
	}
	prompt := strings.Repeat("long shared context ", 50)
	e.Post(base+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"0 %s"}`, prompt))
	if n := treeBytes(); n < float64(len(prompt)) || n > float64(cfg.MaxTreeSize) {
		t.Fatalf("tree_bytes = %v after one %d-byte prompt, cap %d", n, len(prompt), cfg.MaxTreeSize)
	}
	for i := range 40 { // 40 KB of distinct text through a 16 KB tree
		e.Post(base+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"%d %s"}`, i+1, prompt))
	}
	if n := treeBytes(); n > float64(cfg.MaxTreeSize) || n < float64(cfg.MaxTreeSize)/2 {
		t.Fatalf("tree_bytes = %v after 40 KB of distinct prompts, cap %d", n, cfg.MaxTreeSize)
	}
}
