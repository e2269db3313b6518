package routertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Worker is a small OpenAI-shaped upstream for tests of one router piece
// (use target/sim/simtest for a real simulated engine). Request headers
// steer it:
//
//	X-Fake-Status: N      answer N with an OpenAI error body
//	X-Fake-Validation: 1  answer 500 with a vLLM input-validation error
//	X-Fake-Block: 1       hold the response until Release or the client leaves
//	X-Fake-Break: 1       streaming: cut the connection after the first chunk
//	X-Fake-Hold: 1        streaming: hold after the first chunk until Release
//	X-Fake-Hold-First: 1  streaming: send the headers, hold before any chunk until Release
//	X-Fake-Sleep: ms      wait before answering (cut short if the client leaves)
//
// A body with "stream": true gets an SSE answer of three chunks, a usage
// chunk (prompt 5, completion 3) and [DONE]; any other body a completion
// JSON with usage (prompt 7, completion 3) and "served_by": URL. GET
// /health answers 200 (counted in Probes), GET /metrics serves
// vllm:num_requests_waiting = Waiting, GET /v1/models lists model "m".
type Worker struct {
	URL string

	Requests   atomic.Int64 // inference and pass-through requests received
	Probes     atomic.Int64 // health checks received
	Cancelled  atomic.Int64 // held requests whose client (the router) went away
	FailStatus atomic.Int64 // when set, every request is answered with this status
	Stall      atomic.Bool  // when set, every request is held like X-Fake-Block
	Waiting    atomic.Int64 // served as vllm:num_requests_waiting

	srv  *http.Server
	done chan struct{} // closed when Serve returned

	mu      sync.Mutex
	gate    chan struct{} // closed by Release
	headers []http.Header
	closed  bool
}

// StartWorker serves a Worker on a new 127.0.0.1 port until the test ends.
func StartWorker(t testing.TB) *Worker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("routertest: listen: %v", err)
	}
	return StartWorkerOn(t, ln)
}

// StartWorkerOn serves a Worker on ln (a Network listener inside a synctest
// bubble) until the test ends.
func StartWorkerOn(t testing.TB, ln net.Listener) *Worker {
	w := &Worker{URL: "http://" + ln.Addr().String(), gate: make(chan struct{}), done: make(chan struct{})}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve)}
	go func() {
		defer close(w.done)
		_ = w.srv.Serve(ln)
	}()
	t.Cleanup(w.Close)
	return w
}

// Close kills the worker: the port closes and open connections are cut.
// Held requests end. Closing twice does nothing.
func (w *Worker) Close() {
	w.mu.Lock()
	closed := w.closed
	w.closed = true
	w.mu.Unlock()
	if closed {
		return
	}
	_ = w.srv.Close()
	<-w.done
}

// Release unblocks every held response, now and later.
func (w *Worker) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.gate:
	default:
		close(w.gate)
	}
}

// LastHeader returns the headers of the last request received (nil before
// any).
func (w *Worker) LastHeader() http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.headers) == 0 {
		return nil
	}
	return w.headers[len(w.headers)-1]
}

// wait blocks until Release or the client leaves; false if it left.
func (w *Worker) wait(ctx context.Context) bool {
	w.mu.Lock()
	gate := w.gate
	w.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		w.Cancelled.Add(1)
		return false
	}
}

func (w *Worker) serve(rw http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.Probes.Add(1)
		return
	case "/metrics":
		fmt.Fprintf(rw, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} %d\n", w.Waiting.Load())
		return
	}
	w.Requests.Add(1)
	w.mu.Lock()
	w.headers = append(w.headers, r.Header.Clone())
	w.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if code := w.FailStatus.Load(); code != 0 {
		writeError(rw, int(code), "worker failing", "fake")
		return
	}
	if (w.Stall.Load() || r.Header.Get("X-Fake-Block") == "1") && !w.wait(r.Context()) {
		return
	}
	if ms, _ := strconv.Atoi(r.Header.Get("X-Fake-Sleep")); ms > 0 && !w.sleep(r.Context(), time.Duration(ms)*time.Millisecond) {
		return
	}
	if s := r.Header.Get("X-Fake-Status"); s != "" {
		code, _ := strconv.Atoi(s)
		writeError(rw, code, fmt.Sprint("fake ", code), "fake")
		return
	}
	if r.Header.Get("X-Fake-Validation") == "1" {
		writeError(rw, http.StatusInternalServerError, "This model's maximum context length is 2048 tokens", "BadRequestError")
		return
	}
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(rw, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	if !req.Stream {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"id":"x","object":"text_completion","choices":[{"text":"hello","index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10},"served_by":%q}`, w.URL)
		return
	}
	w.stream(rw, r)
}

// sleep waits d unless the client leaves first; false if it left.
func (w *Worker) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		w.Cancelled.Add(1)
		return false
	}
}

func (w *Worker) stream(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(rw)
	if r.Header.Get("X-Fake-Hold-First") == "1" {
		_ = rc.Flush()
		if !w.wait(r.Context()) {
			return
		}
	}
	for i := range 3 {
		fmt.Fprintf(rw, "data: {\"choices\":[{\"text\":\"t%d\",\"index\":0}],\"usage\":null}\n\n", i)
		_ = rc.Flush()
		if i == 0 && r.Header.Get("X-Fake-Hold") == "1" && !w.wait(r.Context()) {
			return
		}
		if i == 0 && r.Header.Get("X-Fake-Break") == "1" {
			if c, _, err := rc.Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
	}
	fmt.Fprint(rw, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n")
	fmt.Fprint(rw, "data: [DONE]\n\n")
}

func writeError(rw http.ResponseWriter, status int, msg, typ string) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}})
}
