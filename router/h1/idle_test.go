package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// pipeWorker is a worker on in-memory connections (net.Pipe), for tests in
// a synctest bubble: synctest.Wait then returns once every connection's
// watcher has done what the bytes it read made it do. Each connection is
// served by answer, which gets the connection's number (from 1) and reads
// and writes on it.
type pipeWorker struct {
	answer func(n int, c net.Conn, br *bufio.Reader)
	wg     sync.WaitGroup
	mu     sync.Mutex
	dialed int
}

func (w *pipeWorker) DialContext(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	w.mu.Lock()
	w.dialed++
	n := w.dialed
	w.mu.Unlock()
	w.wg.Go(func() {
		defer server.Close()
		w.answer(n, server, bufio.NewReader(server))
	})
	return client, nil
}

func (w *pipeWorker) conns() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dialed
}

// newPipeTransport is a Transport to w; the test's cleanup closes its idle
// connections and waits for w's goroutines.
func newPipeTransport(t *testing.T, w *pipeWorker) *Transport {
	tr := New(Options{Dial: w, Fallback: &http.Transport{}, MaxIdlePerHost: 4})
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		w.wg.Wait()
	})
	return tr
}

// readRequests reads requests from br until the connection ends, calling
// each with the request's number on the connection (from 1).
func readRequests(br *bufio.Reader, each func(i int, req *http.Request) bool) {
	for i := 1; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if !each(i, req) {
			return
		}
	}
}

func okAnswer(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func getBody(t *testing.T, tr *Transport) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://worker:80/v1/completions", strings.NewReader("{}"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, resp)
}

func idleCount(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.idle["worker:80"])
}

// A worker that sends a second answer on an idle connection has the
// connection discarded at once: the next request goes to a new connection
// and gets its own answer, not the unasked one.
func TestIdleConnectionThatSpeaksIsDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &pipeWorker{answer: func(n int, c net.Conn, br *bufio.Reader) {
			readRequests(br, func(i int, _ *http.Request) bool {
				if _, err := io.WriteString(c, okAnswer(fmt.Sprintf("conn %d request %d", n, i))); err != nil {
					return false
				}
				if n == 1 { // then, separately, one nobody asked for
					_, _ = io.WriteString(c, okAnswer("unasked"))
				}
				return true
			})
		}}
		tr := newPipeTransport(t, w)
		if got := getBody(t, tr); got != "conn 1 request 1" {
			t.Fatalf("first answer %q", got)
		}
		synctest.Wait()
		if n := idleCount(tr); n != 0 {
			t.Fatalf("%d idle connections after the worker spoke unasked, want 0", n)
		}
		for i := 1; i <= 3; i++ {
			if got, want := getBody(t, tr), fmt.Sprintf("conn 2 request %d", i); got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
		}
	})
}

// Bytes read past an answer's end are never taken for the next answer:
// the connection they came on is closed, not pooled.
func TestBytesAfterAnswerCloseConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &pipeWorker{answer: func(n int, c net.Conn, br *bufio.Reader) {
			readRequests(br, func(i int, _ *http.Request) bool {
				extra := ""
				if n == 1 {
					extra = okAnswer("unasked") // in the same write
				}
				_, err := io.WriteString(c, okAnswer(fmt.Sprintf("conn %d request %d", n, i))+extra)
				return err == nil
			})
		}}
		tr := newPipeTransport(t, w)
		for _, want := range []string{"conn 1 request 1", "conn 2 request 1", "conn 2 request 2"} {
			if got := getBody(t, tr); got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
		}
	})
}

// A worker closing an idle connection has it discarded at once, so the
// next request does not have to fail on it first.
func TestIdleConnectionClosedByWorkerIsDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var requests sync.Map // connection number → requests it received
		w := &pipeWorker{answer: func(n int, c net.Conn, br *bufio.Reader) {
			readRequests(br, func(i int, _ *http.Request) bool {
				requests.Store(n, i)
				_, _ = io.WriteString(c, okAnswer("ok"))
				return false // then close, without saying so
			})
		}}
		tr := newPipeTransport(t, w)
		for range 3 {
			if got := getBody(t, tr); got != "ok" {
				t.Fatalf("answer %q", got)
			}
			synctest.Wait()
			if n := idleCount(tr); n != 0 {
				t.Fatalf("%d idle connections after the worker closed, want 0", n)
			}
		}
		if n := w.conns(); n != 3 {
			t.Errorf("%d connections, want 3", n)
		}
	})
}

// A reused connection's answer comes through its watcher; cancelling the
// request while it waits ends the wait, and the connection is not reused.
func TestCancelWhileAwaitingAnswerOnReusedConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &pipeWorker{answer: func(n int, c net.Conn, br *bufio.Reader) {
			readRequests(br, func(i int, _ *http.Request) bool {
				if n == 1 && i == 2 {
					return true // never answered
				}
				_, err := io.WriteString(c, okAnswer(fmt.Sprintf("conn %d request %d", n, i)))
				return err == nil
			})
		}}
		tr := newPipeTransport(t, w)
		if got := getBody(t, tr); got != "conn 1 request 1" {
			t.Fatalf("answer %q", got)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://worker:80/", strings.NewReader("{}"))
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			errc <- err
		}()
		synctest.Wait() // the request is written and waits for its answer
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		if got := getBody(t, tr); got != "conn 2 request 1" {
			t.Fatalf("answer after the cancel %q", got)
		}
	})
}

// Many goroutines share a pool whose connections the worker closes after
// one to three answers, unannounced, so idle connections die while others
// are being taken: every caller still gets its own answer (a request that
// met a connection closing under it is sent again), and the race detector
// sees the watchers, the pool and the round trips agree.
func TestConcurrentRequestsWhileWorkerClosesIdleConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				readRequests(bufio.NewReader(c), func(i int, req *http.Request) bool {
					_, err := io.WriteString(c, okAnswer(req.Header.Get("X-Tag")))
					return err == nil && i <= n%3
				})
			})
		}
	})
	tr := newTransport(nil)
	defer tr.CloseIdleConnections()
	var callers sync.WaitGroup
	for g := range 8 {
		callers.Go(func() {
			for i := range 40 {
				tag := fmt.Sprintf("caller %d request %d", g, i)
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader("{}"))
				req.Header.Set("X-Tag", tag)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Errorf("%s: %v", tag, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != tag {
					t.Errorf("%s got %q, %v", tag, b, err)
					return
				}
			}
		})
	}
	callers.Wait()
}

// A chunked body read again after its end says EOF again and leaves the
// connection, idle by then and read by its watcher, alone.
func TestChunkedBodyReadAfterEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &pipeWorker{answer: func(n int, c net.Conn, br *bufio.Reader) {
			readRequests(br, func(i int, _ *http.Request) bool {
				body := fmt.Sprintf("conn %d request %d", n, i)
				_, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
				return err == nil
			})
		}}
		tr := newPipeTransport(t, w)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://worker:80/", strings.NewReader("{}"))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "conn 1 request 1" {
			t.Fatalf("body %q, %v", b, err)
		}
		synctest.Wait() // idle, its watcher reading
		if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("read after the end: %d, %v; want 0, EOF", n, err)
		}
		_ = resp.Body.Close()
		if got := getBody(t, tr); got != "conn 1 request 2" {
			t.Fatalf("next answer %q, want conn 1 request 2", got)
		}
	})
}
