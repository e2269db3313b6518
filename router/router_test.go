package router

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestProxiesAndEchoesRequestID(t *testing.T) {
	f := newFakeWorker(t)
	_, base := startRouter(t, testConfig("round_robin", f.URL))
	status, body, h := post(t, base+"/v1/completions", `{"model":"m","prompt":"hi"}`, "X-Correlation-Id", "corr-1")
	if status != 200 || !strings.Contains(body, `"hello"`) {
		t.Fatalf("status %d body %s", status, body)
	}
	if h.Get("X-Request-Id") != "corr-1" || f.lastHeader().Get("X-Request-Id") != "corr-1" {
		t.Errorf("request id echoed %q, forwarded %q; want corr-1", h.Get("X-Request-Id"), f.lastHeader().Get("X-Request-Id"))
	}
	// Without one, the router generates an id, forwards and echoes it.
	_, _, h = post(t, base+"/v1/completions", `{"prompt":"hi"}`)
	if id := h.Get("X-Request-Id"); id == "" || f.lastHeader().Get("X-Request-Id") != id {
		t.Errorf("generated id %q not forwarded (worker saw %q)", id, f.lastHeader().Get("X-Request-Id"))
	}
}

func TestValidationBeforeSelection(t *testing.T) {
	f := newFakeWorker(t)
	cfg := testConfig("round_robin", f.URL)
	cfg.MaxPayloadSize = 64
	_, base := startRouter(t, cfg)
	cases := []struct {
		name, method, body string
		status             int
		typ                string
	}{
		{"bad json", http.MethodPost, `{"prompt":`, 400, ErrTypeInvalidRequest},
		{"not an object", http.MethodPost, `[1,2]`, 400, ErrTypeInvalidRequest},
		{"too large", http.MethodPost, `{"prompt":"` + strings.Repeat("x", 100) + `"}`, 413, ErrTypePayloadTooLarge},
		{"wrong method", http.MethodPut, `{}`, 405, ErrTypeMethodNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, base+"/v1/chat/completions", strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, resp)
			if resp.StatusCode != tc.status || errorType(t, b) != tc.typ {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, b, tc.status, tc.typ)
			}
		})
	}
	if n := f.requests.Load(); n != 0 {
		t.Errorf("rejected requests reached the worker %d times", n)
	}
}

// A client connection that never sent a request (a pool's spare) must not
// hold up shutdown: net/http alone would wait 5 s for it.
func TestServeDoesNotWaitForUnusedConnections(t *testing.T) {
	f := newFakeWorker(t)
	r, err := New(testConfig("round_robin", f.URL))
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
	resp, err := http.Get("http://" + ln.Addr().String() + "/liveness") // serving
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	spare, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	eventually(t, 5*time.Second, func() error { // the server has seen it
		if !r.hasFreshConn() {
			return errors.New("spare connection not accepted yet")
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(4 * time.Second): // below net/http's 5 s: only closing the spare returns sooner
		t.Fatal("Serve still waits for a connection that never sent a request")
	}
}

func (r *Router) hasFreshConn() bool {
	r.fresh.mu.Lock()
	defer r.fresh.mu.Unlock()
	return len(r.fresh.m) > 0
}
