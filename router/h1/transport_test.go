package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTransport(fallback Fallback) *Transport {
	if fallback == nil {
		fallback = &http.Transport{}
	}
	return New(Options{Dial: &net.Dialer{Timeout: 5 * time.Second}, Fallback: fallback, MaxIdlePerHost: 8})
}

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func post(ctx context.Context, t *testing.T, tr http.RoundTripper, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postRead posts body and reads the whole answer.
func postRead(ctx context.Context, t *testing.T, tr http.RoundTripper, url, body string) string {
	t.Helper()
	resp := post(ctx, t, tr, url, body)
	defer resp.Body.Close()
	return readAll(t, resp)
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

// Requests read to their end reuse one connection; what the server sees is
// what net/http's Transport would send.
func TestReusesConnectionAndWritesRequest(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, strings.Join([]string{r.Method, r.RequestURI, r.Host, r.Header.Get("User-Agent"),
			r.Header.Get("Content-Type"), r.Header.Get("X-Multi"), r.Header.Get("Content-Length"), string(b)}, "|"))
		mu.Unlock()
		_, _ = io.WriteString(w, "answer "+string(b))
	}))
	tr := newTransport(nil)
	for i := range 5 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/completions?x=1", strings.NewReader("body"))
		req.Header.Set("Content-Type", "application/json")
		req.Header["X-Multi"] = []string{"a", "b"}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "answer body" || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential requests, want 1", n)
	}
	want := "POST|/v1/completions?x=1|" + strings.TrimPrefix(srv.URL, "http://") + "|Go-http-client/1.1|application/json|a|4|body"
	for i, s := range seen {
		if s != want {
			t.Errorf("request %d arrived as %q, want %q", i, s, want)
		}
	}
}

// Bodyless answers (HEAD, 204) release the connection at once; a POST
// without a body says Content-Length: 0.
func TestBodylessAnswers(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Content-Length") != "0" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusNoContent)
	}))
	tr := newTransport(nil)
	for _, m := range []string{http.MethodHead, http.MethodPost, http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequestWithContext(t.Context(), m, srv.URL+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: status %d", m, resp.StatusCode)
		}
		_ = resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// A chunked stream reaches the caller event by event, and cancelling the
// request's context ends a Read that waits for the next event.
func TestStreamsAndCancels(t *testing.T) {
	release := make(chan struct{})
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	tr := newTransport(nil)
	ctx, cancel := context.WithCancel(t.Context())
	resp := post(ctx, t, tr, srv.URL, "{}")
	defer resp.Body.Close()
	if resp.ContentLength != -1 {
		t.Errorf("ContentLength %d, want -1 (chunked)", resp.ContentLength)
	}
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first read: %q, %v", buf[:n], err)
	}
	readErr := make(chan error, 1)
	body := resp.Body
	go func() {
		_, err := body.Read(buf)
		readErr <- err
	}()
	cancel()
	if err := <-readErr; !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	_ = resp.Body.Close()
	// The cancelled connection is not reused.
	second := post(t.Context(), t, tr, srv.URL, "{}")
	_ = second.Body.Close()
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the cancelled one is closed)", n)
	}
}

// A body closed before its end closes its connection: the next request
// dials anew instead of reading the rest of the old answer.
func TestEarlyCloseDropsConnection(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, big)
	}))
	tr := newTransport(nil)
	resp := post(t.Context(), t, tr, srv.URL, "{}")
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := postRead(t.Context(), t, tr, srv.URL, "{}"); got != big {
		t.Fatalf("second answer has %d bytes, want %d", len(got), len(big))
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// rawServer answers each connection's first request with answer and then
// closes the connection (as a worker whose keep-alive timeout passed
// does), counting connections.
func rawServer(t *testing.T, answer string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, answer)
			})
		}
	})
	return "http://" + ln.Addr().String(), &conns
}

// The worker closing a kept-alive connection as the next request goes
// out is invisible: the request is sent again on a new connection.
func TestRetriesOnStaleConnection(t *testing.T) {
	url, conns := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	tr := newTransport(nil)
	for i := range 3 {
		if got := postRead(t.Context(), t, tr, url, `{"n":1}`); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (each closed after one answer)", n)
	}
}

// Informational answers are skipped; the final answer is returned.
func TestSkipsInformationalAnswers(t *testing.T) {
	url, _ := rawServer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone")
	resp := post(t.Context(), t, newTransport(nil), url, "{}")
	if got := readAll(t, resp); resp.StatusCode != http.StatusCreated || got != "done" {
		t.Fatalf("got %d %q, want 201 done", resp.StatusCode, got)
	}
}

// A header value that would split the request is refused, not written.
func TestRefusesInvalidHeader(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	req.Header["X-Evil"] = []string{"a\r\nX-Injected: 1"}
	resp, err := newTransport(nil).RoundTrip(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, errInvalidRequest) {
		t.Fatalf("err = %v, want errInvalidRequest", err)
	}
}

// https goes to the fallback.
func TestFallbackForHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "tls") }))
	defer srv.Close()
	tr := newTransport(srv.Client().Transport.(*http.Transport))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "tls" {
		t.Fatalf("got %q", got)
	}
}

// Connections idle longer than IdleTimeout are closed, not reused;
// CloseIdleConnections closes the rest.
func TestIdleTimeoutAndClose(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	var now atomic.Int64
	tr := New(Options{Dial: &net.Dialer{}, Fallback: &http.Transport{}, MaxIdlePerHost: 4, IdleTimeout: time.Minute,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	get := func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	get()
	now.Add(59)
	get() // reused: idle 59 s
	now.Add(61)
	get() // idle 61 s: a new connection
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	tr.CloseIdleConnections()
	get()
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections after CloseIdleConnections, want 3", n)
	}
}

// Many goroutines share the pool; every answer matches its request.
func TestConcurrentRequests(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(bytes.ToUpper(b))
	}))
	tr := newTransport(nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				body := strings.Repeat(string(rune('a'+g)), i+1)
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != strings.ToUpper(body) {
					t.Errorf("got %q, %v for %q", b, err, body)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A bodyless request on a stale connection is sent again too.
func TestRetriesBodylessOnStaleConnection(t *testing.T) {
	url, conns := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	tr := newTransport(nil)
	for i := range 3 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/health", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}
