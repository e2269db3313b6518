package router

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Issue 35, acceptance 1: workers that refuse a body with 413 (and close
// the connection while the router still writes it) are not failing. Six
// 40 MiB requests to two simulated engines that accept 32 MiB get 413, and
// the 20 normal completions after them all succeed with every circuit
// closed and no failure counted against either worker.
func TestAcceptanceWorkerRefusalsOpenNoCircuit(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(2)
	cfg := testConfig("round_robin", urls(ws)...)
	r, base := e.router(cfg)

	big := `{"model":"m","prompt":"` + strings.Repeat("a", 40<<20) + `"}`
	for i := range 6 {
		res := e.Post(base+"/v1/completions", big)
		if res.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("40 MiB request %d: %d %.200s, want 413", i, res.Status, res.Body)
		}
		if typ := res.ErrorType(); typ == "" {
			t.Errorf("40 MiB request %d: 413 without an OpenAI error type: %.200s", i, res.Body)
		}
	}
	for i := range 20 {
		if res := e.Post(base+"/v1/completions", completion("hello", 4, false)); res.Status != http.StatusOK {
			t.Fatalf("normal completion %d after the refusals: %d %s", i, res.Status, res.Body)
		}
	}
	for _, w := range r.Pool().Workers() {
		if st := w.Breaker().State(); st != BreakerClosed {
			t.Errorf("circuit of %s is %s, want closed", w.URL(), st)
		}
		if n := testutil.ToFloat64(r.m.cbOutcomes.WithLabelValues(w.URL(), "failure")); n != 0 {
			t.Errorf("%s: %v failures counted, want 0", w.URL(), n)
		}
	}
	// The router learned the bound: later big bodies never reach a worker.
	if limit, from := r.payloadLimit(); limit >= int64(len(big)) || from == "" {
		t.Errorf("payload limit %d (from %q) after the refusals, want below the refused size, learned from a worker", limit, from)
	}
}

// malformedUpstream answers every request with two different
// Content-Lengths and closes, recording the request ids it received.
type malformedUpstream struct {
	URL string
	mu  sync.Mutex
	ids []string
}

func startMalformed(t *testing.T) *malformedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &malformedUpstream{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { u.serve(c) })
		}
	})
	return u
}

func (u *malformedUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if req.URL.Path == "/health" {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		u.mu.Lock()
		u.ids = append(u.ids, req.Header.Get("X-Request-Id"))
		u.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")
		return
	}
}

func (u *malformedUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

// Issue 34, item 4: a malformed answer is one failure of that worker, and
// the request is never sent to it again; it follows the retry policy once
// over the other workers.
func TestMalformedAnswerIsOneFailureNotRetriedOnTheWorker(t *testing.T) {
	t.Parallel()
	t.Run("one worker", func(t *testing.T) {
		t.Parallel()
		e := loopback(t)
		m := startMalformed(t)
		r, base := e.router(testConfig("round_robin", m.URL))
		res := e.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Request-Id", "only-once")
		if res.Status != http.StatusBadGateway || res.ErrorType() != ErrTypeUpstreamError {
			t.Fatalf("got %d %s, want 502 upstream_error", res.Status, res.Body)
		}
		if got := m.received(); len(got) != 1 {
			t.Errorf("the worker received the request %d times (%v), want once", len(got), got)
		}
		if n := testutil.ToFloat64(r.m.cbOutcomes.WithLabelValues(m.URL, "failure")); n != 1 {
			t.Errorf("failures counted against the worker: %v, want 1", n)
		}
	})
	t.Run("two malformed workers", func(t *testing.T) {
		t.Parallel()
		e := loopback(t)
		a, b := startMalformed(t), startMalformed(t)
		_, base := e.router(testConfig("round_robin", a.URL, b.URL))
		res := e.Post(base+"/v1/completions", `{"prompt":"x"}`)
		if res.Status != http.StatusBadGateway {
			t.Fatalf("got %d %s, want 502", res.Status, res.Body)
		}
		if na, nb := len(a.received()), len(b.received()); na != 1 || nb != 1 {
			t.Errorf("workers received the request %d and %d times, want once each", na, nb)
		}
	})
	t.Run("retried on a good worker", func(t *testing.T) {
		t.Parallel()
		e := loopback(t)
		m, good := startMalformed(t), e.worker()
		_, base := e.router(testConfig("round_robin", m.URL, good.URL))
		for i := range 6 {
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != http.StatusOK {
				t.Fatalf("request %d: %d %s, want 200 from the good worker", i, res.Status, res.Body)
			}
		}
		seen := map[string]bool{}
		for _, id := range m.received() {
			if seen[id] {
				t.Errorf("request %s reached the malformed worker twice", id)
			}
			seen[id] = true
		}
		if len(seen) == 0 {
			t.Error("the malformed worker was never picked: the test proves nothing")
		}
	})
}
