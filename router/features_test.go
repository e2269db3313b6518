package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/policy"
)

func TestRunAccountingFromUsage(t *testing.T) {
	f := newFakeWorker(t)
	r, base := startRouter(t, testConfig("round_robin", f.URL))
	post(t, base+"/v1/completions", `{"prompt":"x"}`, RunIDHeader, "run-a")               // usage 7/3
	post(t, base+"/v1/completions", `{"prompt":"x","stream":true}`, RunIDHeader, "run-a") // usage chunk 5/3
	post(t, base+"/v1/completions", `{"prompt":"x"}`, RunIDHeader, "run-b", "X-Fake-Status", "400")
	post(t, base+"/v1/completions", `{"prompt":"x"}`) // no run id: not counted
	// The handler records per-run counters when it returns, which can be a
	// moment after the client read the last byte: poll for them.
	eventually(t, 5*time.Second, func() error {
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
				return fmt.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		return nil
	})
	if n := testutil.CollectAndCount(r.m.runRequests); n != 2 {
		t.Errorf("%d run_id series, want 2", n)
	}
}

func TestUsageTapSplitsAcrossWrites(t *testing.T) {
	stream := "data: {\"choices\":[{\"text\":\"usage\"}],\"usage\":null}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4}}\r\n\r\ndata: [DONE]\n\n"
	for cut := 1; cut < len(stream); cut += 7 {
		tap := newUsageTap("text/event-stream; charset=utf-8")
		tap.Write([]byte(stream[:cut]))
		tap.Write([]byte(stream[cut:]))
		if u := tap.Usage(); u == nil || u.PromptTokens != 11 || u.CompletionTokens != 4 {
			t.Fatalf("cut %d: usage %+v", cut, u)
		}
	}
}

func TestDataParallelRanks(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.IntraNodeDataParallelSize = 3
	r, base := startRouter(t, cfg)
	seen := map[string]int{}
	for range 6 {
		post(t, base+"/v1/completions", `{"prompt":"x"}`)
		seen[f.lastHeader().Get(DPRankHeader)]++
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
	ws := []*fakeWorker{newFakeWorker(t), newFakeWorker(t), newFakeWorker(t)}
	_, base := startRouter(t, testConfig("consistent_hash", ws[0].URL, ws[1].URL, ws[2].URL))
	servedBy := func(session string) string {
		_, body, _ := post(t, base+"/v1/completions", `{"prompt":"x"}`, "X-Session-ID", session)
		var resp struct {
			ServedBy string `json:"served_by"`
		}
		_ = json.Unmarshal([]byte(body), &resp)
		return resp.ServedBy
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
	a, b := newFakeWorker(t), newFakeWorker(t)
	r, base := startRouter(t, testConfig("round_robin", a.URL))
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}
	if s, _ := get("/liveness"); s != 200 {
		t.Errorf("liveness %d", s)
	}
	if s, body := get("/readiness"); s != 200 || !strings.Contains(body, `"healthy_workers":1`) {
		t.Errorf("readiness %d %s", s, body)
	}
	if s, body := get("/v1/models"); s != 200 || !strings.Contains(body, `"id":"m"`) {
		t.Errorf("models %d %s", s, body)
	}
	resp, err := http.Post(base+"/workers", "application/json", strings.NewReader(fmt.Sprintf(`{"url":%q}`, b.URL)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST /workers: %v %v", err, resp.StatusCode)
	}
	readAll(t, resp)
	if resp, _ := http.Post(base+"/workers", "application/json", strings.NewReader(`{"url":"ftp://x"}`)); resp.StatusCode != 400 {
		t.Errorf("bad worker url accepted: %d", resp.StatusCode)
	}
	var list WorkersResponse
	_, body := get("/workers")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Workers) != 2 || list.LoadSignal != LoadSignalInFlight || list.Policy != "round_robin" {
		t.Fatalf("GET /workers = %s (%v)", body, err)
	}
	// Unescaped URL in the path works too.
	req, _ := http.NewRequest(http.MethodDelete, base+"/workers/"+a.URL, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("DELETE unescaped: %v %v", err, resp.StatusCode)
	}
	if _, body := get("/get_loads"); !strings.Contains(body, b.URL) || strings.Contains(body, a.URL) {
		t.Errorf("get_loads after removal: %s", body)
	}
	if r.Pool().Get(a.URL) != nil {
		t.Error("worker still in pool after DELETE")
	}
	req, _ = http.NewRequest(http.MethodDelete, base+"/workers/http%3A%2F%2F127.0.0.1%3A1", nil)
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 404 {
		t.Errorf("DELETE unknown worker → %d, want 404", resp.StatusCode)
	}
	// Every vllm_router_ name from router.md is exposed.
	post(t, base+"/v1/completions", `{"prompt":"x"}`)
	_, metrics := get("/metrics")
	for _, name := range []string{"requests_total", "request_duration_seconds", "processed_requests_total", "policy_decisions_total",
		"worker_load", "running_requests", "worker_health", "cb_state", "active_workers", "max_load", "min_load", "load_signal", "cb_outcomes_total"} {
		if !strings.Contains(metrics, "vllm_router_"+name) {
			t.Errorf("/metrics lacks vllm_router_%s", name)
		}
	}
}

func TestTwoRoutersInOneProcess(t *testing.T) {
	f := newFakeWorker(t)
	r1, base1 := startRouter(t, testConfig("round_robin", f.URL))
	r2, _ := startRouter(t, testConfig("random", f.URL))
	post(t, base1+"/v1/completions", `{"prompt":"x"}`)
	if a, b := testutil.ToFloat64(r1.m.processed.WithLabelValues(f.URL)), testutil.ToFloat64(r2.m.processed.WithLabelValues(f.URL)); a != 1 || b != 0 {
		t.Fatalf("metrics leaked between routers: %v %v", a, b)
	}
}

func TestStreamingPassesThroughFlushed(t *testing.T) {
	f := newFakeWorker(t)
	_, base := startRouter(t, testConfig("round_robin", f.URL))
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	if !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) || bytes.Count(b, []byte("data: ")) != 5 {
		t.Fatalf("stream altered: %q", b)
	}
}

// A stream's headers reach the client when the worker sends them, before
// its first event.
func TestStreamHeadersRelayedBeforeFirstEvent(t *testing.T) {
	f := newFakeWorker(t)
	_, base := startRouter(t, testConfig("round_robin", f.URL))
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","stream":true}`))
	req.Header.Set("X-Fake-Hold-First", "1")
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- resp
	}()
	var resp *http.Response
	select {
	case resp = <-got:
	case <-time.After(5 * time.Second): // a failure bound, not a latency threshold
		f.release()
		t.Fatal("no headers while the worker holds its first event: the router held them back")
	}
	if resp == nil {
		t.FailNow()
	}
	f.release()
	b := readAll(t, resp)
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("stream %q with content type %q", b, resp.Header.Get("Content-Type"))
	}
}

func TestQueueBlendedLoadSignal(t *testing.T) {
	queued, idle := newFakeWorker(t), newFakeWorker(t)
	queued.waiting.Store(7)
	cfg := testConfig("least_loaded", queued.URL, idle.URL)
	cfg.LoadSignal, cfg.LoadCheckIntervalSecs = LoadSignalInFlightQueue, 0.05
	r, base := startRouter(t, cfg)
	eventually(t, 5*time.Second, func() error {
		if st := r.Workers(); st.Workers[0].Queue+st.Workers[1].Queue != 7 {
			return fmt.Errorf("queue depths not scraped yet: %+v", st.Workers)
		}
		return nil
	})
	for range 6 {
		post(t, base+"/v1/completions", `{"prompt":"x"}`)
	}
	if n := queued.requests.Load(); n != 0 {
		t.Errorf("least_loaded sent %d requests to the worker with 7 queued", n)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m := readAll(t, resp)
	if !strings.Contains(m, `vllm_router_load_signal{signal="in_flight+queue"} 1`) ||
		!strings.Contains(m, fmt.Sprintf("vllm_router_worker_load{worker=%q} 7", queued.URL)) {
		t.Errorf("metrics do not report the blended signal:\n%s", m)
	}
}

func TestWorkerBreakMidStreamIsVisibleToClient(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	r, base := startRouter(t, cfg)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","stream":true}`))
	req.Header.Set("X-Fake-Break", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a stream the worker broke off ended cleanly for the client")
	}
	if n := testutil.ToFloat64(r.m.cbOutcomes.WithLabelValues(f.URL, "failure")); n != 1 {
		t.Errorf("breaker failures = %v, want the broken stream counted", n)
	}
}

func TestRemovingWorkerPrunesCacheTree(t *testing.T) {
	a, b := newFakeWorker(t), newFakeWorker(t)
	r, base := startRouter(t, testConfig("cache_aware", a.URL, b.URL))
	for i := range 4 {
		post(t, base+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"%d: a distinct prompt"}`, i))
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
