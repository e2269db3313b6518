package router

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Framing between the router and its workers (issue 34): a worker's
// answer only ever reaches the client that asked for it.

// taggingUpstream is a worker on 127.0.0.1 that answers every request with
// its X-Request-Id ({"id":…}) and keeps each request's headers. With the
// answer to the request whose id is inject (in the same write), or once
// injectNow is closed when that is set, it sends a second answer nobody
// asked for ({"id":"injected"}); it closes injectedGone once the router
// closed that connection, or injectedReused if the router sent another
// request on it.
type taggingUpstream struct {
	url            string
	inject         string
	injectNow      chan struct{}
	injectedGone   chan struct{}
	injectedReused chan struct{}

	mu      sync.Mutex
	headers map[string]http.Header
}

func startTaggingUpstream(t *testing.T, inject string) *taggingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &taggingUpstream{url: "http://" + ln.Addr().String(), inject: inject, injectedGone: make(chan struct{}),
		injectedReused: make(chan struct{}), headers: map[string]http.Header{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() { u.serve(c) })
		}
	})
	return u
}

func (u *taggingUpstream) serve(c net.Conn) {
	defer c.Close()
	injected := false
	defer func() {
		if injected {
			close(u.injectedGone)
		}
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if injected {
			close(u.injectedReused)
			return
		}
		id := req.Header.Get("X-Request-Id")
		u.mu.Lock()
		u.headers[id] = req.Header
		u.mu.Unlock()
		answer := taggedAnswer(id)
		if id != "" && id == u.inject {
			injected = true
			if u.injectNow == nil {
				answer += taggedAnswer("injected")
			} else {
				if _, err := io.WriteString(c, answer); err != nil {
					return
				}
				<-u.injectNow
				answer = taggedAnswer("injected")
			}
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

func taggedAnswer(id string) string {
	body := fmt.Sprintf(`{"id":%q}`, id)
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// header is what the upstream received with the request whose id is id.
func (u *taggingUpstream) header(id string) http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers[id]
}

// A worker that sends an extra answer after a complete one loses that
// connection: the next 20 clients each get their own answer, none gets the
// injected one or another client's (issue 34, acceptance 1).
//
// The extra answer comes with the first (the router reads past the answer's
// end and closes the connection) or once the connection is idle (the idle
// watch discards it).
func TestExtraWorkerAnswerReachesNoClient(t *testing.T) {
	for _, later := range []bool{false, true} {
		t.Run(map[bool]string{false: "with the answer", true: "while idle"}[later], func(t *testing.T) {
			e := loopback(t)
			up := startTaggingUpstream(t, "client-0")
			if later {
				up.injectNow = make(chan struct{})
			}
			_, base := e.router(testConfig("round_robin", up.url))
			post := func(id string) {
				t.Helper()
				res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"p"}`, "X-Request-Id", id)
				if want := fmt.Sprintf(`{"id":%q}`, id); res.Status != http.StatusOK || res.Body != want {
					t.Fatalf("client %s got %d %s, want its own answer %s", id, res.Status, res.Body, want)
				}
			}
			post("client-0")
			if later {
				close(up.injectNow)
			}
			// A router without the watch reuses the connection (its next
			// health check does, if no client comes first); the bound only
			// keeps a router that neither drops nor reuses it from hanging
			// the test.
			select {
			case <-up.injectedGone:
			case <-up.injectedReused:
				t.Fatal("the router sent a request on the connection a worker had sent an unasked answer on")
			case <-time.After(time.Minute):
				t.Fatal("the router kept the connection a worker sent an unasked answer on")
			}
			for i := 1; i <= 20; i++ {
				post(fmt.Sprintf("client-%d", i))
			}
		})
	}
}

// rawAnswer is an answer as rawExchange read it.
type rawAnswer struct {
	status int
	close  bool
}

// rawExchange writes raw to the router on a new connection and reads what
// comes back until the router closes it: every answer, in order.
func rawExchange(t *testing.T, base, raw string) []rawAnswer {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Only keeps a router that leaves the connection open from hanging the
	// test.
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	var out []rawAnswer
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		out = append(out, rawAnswer{status: resp.StatusCode, close: resp.Close})
		if resp.Close {
			return out
		}
	}
}

// A request head with a bare LF among CRLFs is refused (400, connection
// closed), and neither the request a CRLF-only proxy in front would see nor
// the one smuggled behind the LF reaches a worker (issue 34, acceptance 2).
func TestMixedLineEndingsAreRefused(t *testing.T) {
	e := loopback(t)
	up := startTaggingUpstream(t, "")
	_, base := e.router(testConfig("round_robin", up.url))
	smuggled := "POST /v1/completions HTTP/1.1\r\nHost: r\r\nX-Request-Id: smuggled\r\nContent-Length: 2\r\n\r\n{}"
	for name, head := range map[string]string{
		// A CRLF-only reader sees one X-Pad field and no body, then the
		// smuggled request; an LF-accepting one a 2-byte body.
		"field line":   "POST /v1/completions HTTP/1.1\r\nHost: r\r\nX-Request-Id: front\r\nX-Pad: a\nContent-Length: 2\r\n\r\n{}",
		"request line": "POST /v1/completions HTTP/1.1\nHost: r\r\nX-Request-Id: front\r\nContent-Length: 2\r\n\r\n{}",
		"end of head":  "POST /v1/completions HTTP/1.1\r\nHost: r\r\nX-Request-Id: front\r\nContent-Length: 2\r\n\n{}",
		"whole head":   "POST /v1/completions HTTP/1.1\nHost: r\nX-Request-Id: front\nContent-Length: 2\n\n{}",
	} {
		t.Run(name, func(t *testing.T) {
			answers := rawExchange(t, base, head+smuggled)
			if len(answers) != 1 || answers[0].status != http.StatusBadRequest || !answers[0].close {
				for _, a := range answers {
					t.Logf("answer %d close=%v", a.status, a.close)
				}
				t.Fatalf("%d answers, want one 400 that closes the connection", len(answers))
			}
			for _, id := range []string{"front", "smuggled"} {
				if up.header(id) != nil {
					t.Errorf("the request with id %q reached the worker", id)
				}
			}
		})
	}
	// The same requests with CRLF throughout are served, one after the other.
	answers := rawExchange(t, base, strings.Replace(smuggled, "smuggled", "first", 1)+smuggled+
		"GET /liveness HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
	if len(answers) != 3 || answers[0].status != http.StatusOK || answers[1].status != http.StatusOK {
		t.Fatalf("%d answers to well-formed pipelined requests, want 3", len(answers))
	}
}

// Header fields whose names hold "_" are dropped before a request reaches
// a worker (a CGI/WSGI-style server reads Content_Length as Content-Length),
// unless keep_underscore_headers is set (issue 34, acceptance 2).
func TestUnderscoreHeaderNamesAreDropped(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			e := loopback(t)
			up := startTaggingUpstream(t, "")
			cfg := testConfig("round_robin", up.url)
			cfg.KeepUnderscoreHeaders = keep
			_, base := e.router(cfg)
			res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"p"}`, "X-Request-Id", "u",
				"Content_Length", "1000", "Transfer_Encoding", "chunked", "X_Tenant", "a", "X-Tenant", "b")
			if res.Status != http.StatusOK || res.Body != `{"id":"u"}` {
				t.Fatalf("got %d %s", res.Status, res.Body)
			}
			h := up.header("u")
			for _, k := range []string{"Content_length", "Transfer_encoding", "X_tenant"} {
				if _, got := h[k]; got != keep {
					t.Errorf("%s reached the worker: %v, want %v (%v)", k, got, keep, h)
				}
			}
			if h.Get("X-Tenant") != "b" || h.Get("Content-Length") != "26" {
				t.Errorf("the worker got X-Tenant %q, Content-Length %q; want b, 26", h.Get("X-Tenant"), h.Get("Content-Length"))
			}
		})
	}
}
