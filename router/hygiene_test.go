package router

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// Issue 35, acceptance 4, on a synctest bubble's fake clock: 50 connections
// that trickle their heads and 50 that trickle their bodies are all closed
// exactly when the documented deadlines pass — read_header_timeout_secs
// (10 s) for a head, BodyRateGraceSecs for a body below min_body_rate —
// while normal requests sent meanwhile are served.
func TestAcceptanceSlowClientsAreCutOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		r, base := e.router(cfg)
		synctest.Wait() // the first health probe ran: the worker serves
		start := time.Now()

		type cut struct {
			kind   string
			after  time.Duration
			status int
		}
		cuts := make(chan cut, 100)
		var wg sync.WaitGroup
		trickle := func(kind, first string) {
			c := rawConn(t, e, base)
			var writer sync.WaitGroup
			writer.Go(func() { // one byte a second until the router stops reading
				if _, err := io.WriteString(c, first); err != nil {
					return
				}
				for {
					time.Sleep(time.Second)
					if _, err := c.Write([]byte("a")); err != nil {
						return
					}
				}
			})
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			_, _ = io.Copy(io.Discard, c) // until the router closes
			cuts <- cut{kind, time.Since(start), status}
			_ = c.Close()
			writer.Wait()
		}
		for range 50 {
			wg.Go(func() { trickle("head", "POST /v1/completions HTTP/1.1\r\nHost: r\r\nX-Slow: ") })
			wg.Go(func() { trickle("body", "POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: 100000\r\n\r\n{") })
		}
		// Normal requests before and while the slow ones are held.
		for i := range 10 {
			if i == 5 {
				time.Sleep(5 * time.Second)
			}
			if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != http.StatusOK {
				t.Errorf("normal request %d among slow clients: %d %s", i, res.Status, res.Body)
			}
		}
		wg.Wait()
		close(cuts)
		want := map[string]time.Duration{
			"head": secs(routerconfig.DefaultReadHeaderTimeoutSecs),
			"body": routerconfig.BodyRateGraceSecs * time.Second,
		}
		n := map[string]int{}
		for c := range cuts {
			n[c.kind]++
			if c.after != want[c.kind] || c.status != http.StatusRequestTimeout {
				t.Errorf("slow %s: closed after %v with %d, want %v with 408", c.kind, c.after, c.status, want[c.kind])
			}
		}
		if n["head"] != 50 || n["body"] != 50 {
			t.Errorf("closed %v, want 50 of each", n)
		}
		synctest.Wait()
		if held := r.bodies.held.Load(); held != 0 {
			t.Errorf("%d body bytes still reserved", held)
		}
	})
}

// A connection over max_connections is answered 503 too_many_connections
// and closed; once a connection closes, a new one is served.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		cfg := testConfig("round_robin", e.worker().URL)
		cfg.MaxConnections = 3
		_, base := e.router(cfg)
		synctest.Wait()
		held := make([]net.Conn, 3)
		for i := range held {
			held[i] = rawConn(t, e, base)
		}
		// ask reads the answer on a new connection, after sending a request
		// if send (a refused connection is answered before it is read).
		ask := func(send bool) (int, string) {
			c := rawConn(t, e, base)
			defer c.Close()
			if send {
				if _, err := io.WriteString(c, "GET /liveness HTTP/1.1\r\nHost: r\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		if status, body := ask(false); status != http.StatusServiceUnavailable || !strings.Contains(body, `"type":"`+ErrTypeTooManyConnections+`"`) {
			t.Fatalf("connection over the cap: %d %s, want 503 %s", status, body, ErrTypeTooManyConnections)
		}
		_ = held[0].Close()
		synctest.Wait()
		if status, body := ask(true); status != http.StatusOK {
			t.Fatalf("after a connection closed: %d %s, want 200", status, body)
		}
	})
}
