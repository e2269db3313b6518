package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeWorker is a small OpenAI-ish server for unit tests of one router
// piece. Request headers steer it:
//
//	X-Fake-Status: N      answer N with an OpenAI error body
//	X-Fake-Validation: 1  answer 500 with a vLLM validation error
//	X-Fake-Block: 1       hold the response until release() or the client leaves
//	X-Fake-Break: 1       streaming: cut the connection after the first chunk
//	X-Fake-Hold: 1        streaming: hold after the first chunk until release()
//	X-Fake-Hold-First: 1  streaming: send the headers, hold before any chunk until release()
//	X-Fake-Sleep: ms      wait before answering (cut short if the client leaves)
//
// failStatus, when set, makes this worker answer every request with it.
// A body with "stream": true gets an SSE answer with a usage chunk.
type fakeWorker struct {
	*httptest.Server
	requests   atomic.Int64
	probes     atomic.Int64
	cancelled  atomic.Int64 // requests whose client (the router) went away
	failStatus atomic.Int64
	waiting    atomic.Int64 // served as vllm:num_requests_waiting
	gate       chan struct{}
	mu         sync.Mutex
	headers    []http.Header
}

func newFakeWorker(t *testing.T) *fakeWorker {
	t.Helper()
	f := &fakeWorker{gate: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// release unblocks every held response, now and later.
func (f *fakeWorker) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.gate:
	default:
		close(f.gate)
	}
}

// wait blocks until release() or the client leaves; false if it left.
func (f *fakeWorker) wait(ctx context.Context) bool {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		f.cancelled.Add(1)
		return false
	}
}

func (f *fakeWorker) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 {
		return nil
	}
	return f.headers[len(f.headers)-1]
}

func (f *fakeWorker) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		f.probes.Add(1)
		return
	}
	if r.URL.Path == "/metrics" {
		fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} %d\n", f.waiting.Load())
		return
	}
	f.requests.Add(1)
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if code := f.failStatus.Load(); code != 0 {
		w.WriteHeader(int(code))
		fmt.Fprintf(w, `{"error":{"message":"worker failing","type":"fake","param":null,"code":%d}}`, code)
		return
	}
	if r.Header.Get("X-Fake-Block") == "1" && !f.wait(r.Context()) {
		return
	}
	if ms, _ := strconv.Atoi(r.Header.Get("X-Fake-Sleep")); ms > 0 {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			f.cancelled.Add(1)
			return
		}
	}
	if s := r.Header.Get("X-Fake-Status"); s != "" {
		code, _ := strconv.Atoi(s)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"fake %d","type":"fake","param":null,"code":%d}}`, code, code)
		return
	}
	if r.Header.Get("X-Fake-Validation") == "1" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"This model's maximum context length is 2048 tokens","type":"BadRequestError","param":null,"code":500}}`)
		return
	}
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"text_completion","choices":[{"text":"hello","index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10},"served_by":%q}`, f.URL)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	if r.Header.Get("X-Fake-Hold-First") == "1" {
		_ = rc.Flush()
		if !f.wait(r.Context()) {
			return
		}
	}
	for i := range 3 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\",\"index\":0}],\"usage\":null}\n\n", i)
		_ = rc.Flush()
		if i == 0 && r.Header.Get("X-Fake-Hold") == "1" && !f.wait(r.Context()) {
			return
		}
		if i == 0 && r.Header.Get("X-Fake-Break") == "1" {
			conn, _, err := rc.Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
	fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// testConfig is a config with fast health checks and short backoffs. A
// killed worker refuses connections at once, so it is marked within
// failure_threshold (3) × 0.1 s; a live one would need 3 probes in a row
// slower than 0.1 s to be marked by mistake, which a loaded 2-core machine
// does not produce.
func testConfig(policyName string, workers ...string) Config {
	c := DefaultConfig()
	c.Policy = policyName
	c.WorkerURLs = workers
	c.HealthCheck.IntervalSecs = 0.1
	c.HealthCheck.TimeoutSecs = 0.1
	c.Retry.InitialBackoffMs = 1
	c.Retry.MaxBackoffMs = 5
	return c
}

// startRouter serves a router on a loopback port for the test's lifetime.
// At cleanup it checks that every load returned to 0 — every test doubles
// as a load-accounting check — and that Serve stopped cleanly.
func startRouter(t *testing.T, cfg Config, opts ...Option) (*Router, string) {
	t.Helper()
	r, err := New(cfg, append([]Option{WithSeed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		waitLoadsZero(t, r)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r, "http://" + ln.Addr().String()
}

// waitLoadsZero polls until every load is 0; responses can reach the client
// a moment before the router's handler returns.
func waitLoadsZero(t *testing.T, r *Router) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		for url, n := range r.Loads() {
			if n != 0 {
				return fmt.Errorf("load of %s is %d, want 0 (all loads %v)", url, n, r.Loads())
			}
		}
		return nil
	})
}

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t *testing.T, within time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", within, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// post sends a JSON body with headers and returns status and body.
func post(t *testing.T, url, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// errorType decodes an OpenAI error body's type.
func errorType(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Type
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
