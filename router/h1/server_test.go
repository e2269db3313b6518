package h1

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveTest serves h on a loopback port for the test's lifetime.
func serveTest(t *testing.T, h http.Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// echo answers with the method, path, body length and one header.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s %d %s", r.Method, r.URL.Path, len(b), r.Header.Get("X-Test"))
})

// answer is a response as exchange read it.
type answer struct {
	status int
	close  bool // the server said it closes the connection
	body   string
}

// exchange writes raw on a new connection and reads one response.
func exchange(t *testing.T, addr, raw string) answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, close: resp.Close, body: string(b)}
}

func TestServerAnswersAndRefuses(t *testing.T) {
	_, addr := serveTest(t, echo)
	const host = "Host: x\r\n"
	for _, c := range []struct {
		name, raw string
		status    int
		body      string // the echo, or the error type
	}{
		{"get", "GET /a HTTP/1.1\r\n" + host + "X-Test: v\r\n\r\n", 200, "GET /a 0 v"},
		{"content-length", "POST /b HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello", 200, "POST /b 5 "},
		{"chunked", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", 200, "POST /c 8 "},
		{"leading empty line", "\r\nGET /d HTTP/1.1\r\n" + host + "\r\n", 200, "GET /d 0 "},
		{"http/1.0 without host", "GET /e HTTP/1.0\r\n\r\n", 200, "GET /e 0 "},
		{"both lengths", "POST / HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "invalid_request"},
		{"two lengths", "POST / HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400, "invalid_request"},
		{"signed length", "POST / HTTP/1.1\r\n" + host + "Content-Length: +5\r\n\r\nhello", 400, "invalid_request"},
		{"gzip coding", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "invalid_request"},
		{"folded line", "GET / HTTP/1.1\r\n" + host + "X-A: 1\r\n folded\r\n\r\n", 400, "invalid_request"},
		{"space before colon", "GET / HTTP/1.1\r\n" + host + "X-A : 1\r\n\r\n", 400, "invalid_request"},
		{"control byte", "GET / HTTP/1.1\r\n" + host + "X-A: 1\x01\r\n\r\n", 400, "invalid_request"},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, "invalid_request"},
		{"two hosts", "GET / HTTP/1.1\r\n" + host + host + "\r\n", 400, "invalid_request"},
		{"http/2", "GET / HTTP/2.0\r\n" + host + "\r\n", 505, "invalid_request"},
		{"bad request line", "GET /\r\n" + host + "\r\n", 400, "invalid_request"},
		{"expect other", "POST / HTTP/1.1\r\n" + host + "Expect: magic\r\nContent-Length: 1\r\n\r\nx", 417, "invalid_request"},
		{"head too large", "GET / HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("a", DefaultMaxHeaderBytes) + "\r\n\r\n", 431, "invalid_request"},
		{"bad chunk", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, ""},
		// A head is all CRLF or refused: a proxy that ends lines only at
		// CRLF would read other fields or requests than the router.
		{"bare LF in a field line", "GET / HTTP/1.1\r\n" + host + "X-A: 1\nX-B: 2\r\n\r\n", 400, "invalid_request"},
		{"bare LF after the request line", "GET / HTTP/1.1\n" + host + "\r\n", 400, "invalid_request"},
		{"bare LF ending the head", "GET / HTTP/1.1\r\n" + host + "\n", 400, "invalid_request"},
		{"all bare LF", "GET / HTTP/1.1\nHost: x\n\n", 400, "invalid_request"},
		{"bare LF before the request line", "\nGET / HTTP/1.1\r\n" + host + "\r\n", 400, "invalid_request"},
		{"bare LF in a trailer", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\n\r\n", 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := exchange(t, addr, c.raw)
			body := a.body
			if a.status != c.status {
				t.Fatalf("status %d (%s), want %d", a.status, body, c.status)
			}
			if c.status == 200 {
				if body != c.body {
					t.Errorf("body %q, want %q", body, c.body)
				}
				return
			}
			if c.body == "" {
				return // the handler's own error
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type != c.body || e.Error.Code != c.status || e.Error.Message == "" {
				t.Errorf("error body %q (%v), want the OpenAI shape with type %s", body, err, c.body)
			}
			if !a.close {
				t.Error("a refused request left the connection open")
			}
		})
	}
}

// Requests on one connection are answered in turn; a small answer goes out
// with a Content-Length, a flushed one chunked.
func TestServerKeepAliveAndFraming(t *testing.T) {
	_, addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "part1")
		if r.URL.Path == "/flush" {
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "part2")
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, path := range []string{"/plain", "/flush", "/plain"} {
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		chunked := len(resp.TransferEncoding) > 0
		if string(b) != "part1part2" || chunked != (path == "/flush") || resp.Close {
			t.Errorf("%s: body %q chunked %v close %v", path, b, chunked, resp.Close)
		}
	}
}

// A connection's requests reuse one request, URL, header map and values
// array (headRoom): each handler sees its own request's target and
// fields, nothing of the one before, and a value it keeps past its
// request stays intact.
func TestServerRequestsOnOneConnectionAreSeparate(t *testing.T) {
	var kept []string // X-Keep of every request, kept past its request
	_, addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kept = append(kept, r.Header.Get("X-Keep"))
		names := make([]string, 0, len(r.Header))
		for k, vs := range r.Header {
			names = append(names, k+"="+strings.Join(vs, ","))
		}
		slices.Sort(names)
		fmt.Fprintf(w, "%s %s %q %s", r.Method, r.URL.Path, r.URL.RawQuery, strings.Join(names, " "))
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, step := range []struct{ head, want string }{
		{"GET /a?x=1 HTTP/1.1\r\nHost: h\r\nX-Keep: one\r\nX-A: 1\r\nX-A: 2\r\nX-B: b\r\n", `GET /a "x=1" X-A=1,2 X-B=b X-Keep=one`},
		{"GET /b HTTP/1.1\r\nHost: h\r\nX-Keep: two\r\n", `GET /b "" X-Keep=two`},
		{"POST /%7Ec HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n", `POST /~c "" Content-Length=0`},
		{"GET /d?y HTTP/1.1\r\nHost: h\r\nX-B: again\r\nX-Keep: three\r\n", `GET /d "y" X-B=again X-Keep=three`},
	} {
		if _, err := io.WriteString(c, step.head+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != step.want {
			t.Errorf("request %d: handler saw %q, want %q", i, b, step.want)
		}
	}
	if want := []string{"one", "two", "", "three"}; !slices.Equal(kept, want) {
		t.Errorf("kept values %q, want %q", kept, want)
	}
}

// A flushed event reaches the client while the handler still runs.
func TestServerStreamsFlushedEvents(t *testing.T) {
	release := make(chan struct{})
	_, addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Error(err)
		}
		<-release
		_, _ = io.WriteString(w, "data: 2\n\n")
	}))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	close(release)
	if err != nil || first != "data: 1\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: 2\n\n" {
		t.Errorf("rest %q", rest)
	}
}

// A client that closes its connection cancels its request's context
// while the handler waits.
func TestServerCancelsWhenClientLeaves(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	_, addr := serveTest(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- context.Cause(r.Context())
		case <-time.After(10 * time.Second):
			cancelled <- errors.New("not cancelled")
		}
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	<-started
	c.Close()
	if err := <-cancelled; !errors.Is(err, errClientGone) {
		t.Errorf("handler's context ended with %v, want %v", err, errClientGone)
	}
}

// Expect: 100-continue gets its interim answer when the body is read.
func TestServerExpectContinue(t *testing.T) {
	_, addr := serveTest(t, echo)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim line %q, %v", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "abc")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "POST /x 3 " {
		t.Errorf("body %q", b)
	}
}

// A handler that aborts cuts the connection: the client sees a truncated
// answer, not a clean end.
func TestServerAbortCutsConnection(t *testing.T) {
	_, addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if string(b) != "partial" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read %q, %v; want the partial body and an unexpected EOF", b, err)
	}
}

// Shutdown closes idle connections at once and lets an answer in progress
// finish, with Connection: close.
func TestServerShutdown(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	s, addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	got := make(chan string, 1)
	go func() {
		got <- exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").body
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: read %v, want EOF", err)
	}
	close(release)
	if body := <-got; body != "done" {
		t.Errorf("answer in progress: %q", body)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
