package router

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestProxiesAndEchoesRequestID(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	_, base := e.router(testConfig("round_robin", f.URL))
	res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"hi"}`, "X-Correlation-Id", "corr-1")
	if res.Status != 200 || !strings.Contains(res.Body, `"hello"`) {
		t.Fatalf("status %d body %s", res.Status, res.Body)
	}
	if res.Header.Get("X-Request-Id") != "corr-1" || f.LastHeader().Get("X-Request-Id") != "corr-1" {
		t.Errorf("request id echoed %q, forwarded %q; want corr-1", res.Header.Get("X-Request-Id"), f.LastHeader().Get("X-Request-Id"))
	}
	// Without one, the router generates an id, forwards and echoes it.
	res = e.Post(base+"/v1/completions", `{"prompt":"hi"}`)
	if id := res.Header.Get("X-Request-Id"); id == "" || f.LastHeader().Get("X-Request-Id") != id {
		t.Errorf("generated id %q not forwarded (worker saw %q)", id, f.LastHeader().Get("X-Request-Id"))
	}
}

func TestValidationBeforeSelection(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	f := e.worker()
	cfg := testConfig("round_robin", f.URL)
	cfg.MaxPayloadSize = 64
	_, base := e.router(cfg)
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
		res := e.Call(context.Background(), tc.method, base+"/v1/chat/completions", tc.body)
		if res.Status != tc.status || res.ErrorType() != tc.typ {
			t.Errorf("%s: got %d %s, want %d %s", tc.name, res.Status, res.Body, tc.status, tc.typ)
		}
	}
	if n := f.Requests.Load(); n != 0 {
		t.Errorf("rejected requests reached the worker %d times", n)
	}
}

// A client connection that never sent a request (a pool's spare) must not
// hold up shutdown: net/http alone waits 5 s for it. On the bubble's clock
// those 5 s would pass exactly, so any shorter shutdown shows the spare was
// closed.
func TestServeDoesNotWaitForUnusedConnections(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		r, err := New(testConfig("round_robin", f.URL), WithDialer(e.net))
		if err != nil {
			t.Fatal(err)
		}
		ln := e.listen()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Serve(ctx, ln) }()
		if res := e.Get("http://" + ln.Addr().String() + "/liveness"); res.Status != 200 {
			t.Fatalf("liveness %d", res.Status)
		}
		synctest.Wait()
		before := r.front.Load().Open()
		spare, err := e.net.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer spare.Close()
		synctest.Wait()
		if r.front.Load().Open() != before+1 {
			t.Fatal("the spare connection was not accepted")
		}
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if took := time.Since(start); took >= 5*time.Second {
			t.Fatalf("Serve took %v on the fake clock to stop: it waited for a connection that never sent a request", took)
		}
	})
}
