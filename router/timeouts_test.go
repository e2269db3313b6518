package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// The router set no body read timeout and no idle timeout: a body trickled
// at 1 byte per 2 s, or an idle keep-alive connection, was held forever
// (245 idle connections locked out new clients under a 256-file limit).
// These run on a synctest bubble's fake clock, so each timeout is seen to
// fire exactly when due, and never earlier.

// rawConn dials the router's address on the bubble's network.
func rawConn(t *testing.T, e *env, base string) net.Conn {
	t.Helper()
	c, err := e.net.DialContext(context.Background(), "tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestTrickledBodyIsCutAtBodyReadTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		cfg := testConfig("round_robin", f.URL)
		cfg.MinBodyRate = 0 // body_read_timeout_secs alone (hygiene_test.go: the rate)
		r, base := e.router(cfg)
		c := rawConn(t, e, base)
		start := time.Now()
		if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		trickled := make(chan struct{})
		go func() { // one byte every 2 s until the router stops reading
			defer close(trickled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		defer func() { close(stop); _ = c.Close(); <-trickled }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 408 || !strings.Contains(string(body), ErrTypeBodyReadTimeout) {
			t.Fatalf("trickled body → %d %s, want 408 %s", resp.StatusCode, body, ErrTypeBodyReadTimeout)
		}
		if got, want := time.Since(start), secs(routerconfig.DefaultBodyReadTimeoutSecs); got != want {
			t.Errorf("cut after %v, want exactly body_read_timeout_secs %v", got, want)
		}
		_ = c.Close()
		synctest.Wait()
		if f.Requests.Load() != 0 || r.bodies.held.Load() != 0 {
			t.Errorf("worker saw %d requests, %d body bytes still held", f.Requests.Load(), r.bodies.held.Load())
		}
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 200 {
			t.Fatalf("router no longer serves: %d", res.Status)
		}
	})
}

// closedWithin reports whether the server closed c within d (fake time).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		_, base := e.router(testConfig("round_robin", e.worker().URL))
		idle, hdr := secs(routerconfig.DefaultIdleTimeoutSecs), secs(routerconfig.DefaultReadHeaderTimeoutSecs)

		// A connection that never sends a request: read_header_timeout_secs.
		silent := rawConn(t, e, base)
		if closedWithin(silent, hdr-time.Second) {
			t.Fatal("a silent connection was closed before read_header_timeout_secs")
		}
		if !closedWithin(silent, 2*time.Second) {
			t.Fatal("a silent connection outlived read_header_timeout_secs")
		}

		// A keep-alive connection between requests: idle_timeout_secs.
		c := rawConn(t, e, base)
		br := bufio.NewReader(c)
		get := func() {
			t.Helper()
			if _, err := io.WriteString(c, "GET /liveness HTTP/1.1\r\nHost: r\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get()
		time.Sleep(idle - time.Second)
		get() // still open, and the idle period starts again
		time.Sleep(idle - time.Second)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("keep-alive connection idle past idle_timeout_secs: read %v, want EOF", err)
		}
	})
}

func TestClientThatStopsReadingIsCut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		f := e.worker()
		r, base := e.router(testConfig("round_robin", f.URL))
		c := rawConn(t, e, base)
		body := `{"prompt":"x","stream":true}`
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		// The client never reads: the router's first write blocks.
		idle := secs(routerconfig.DefaultWriteIdleTimeoutSecs)
		time.Sleep(idle - time.Second)
		wantLoads(t, r, map[string]int64{f.URL: 1})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		wantLoads(t, r, map[string]int64{f.URL: 0})
		if res := e.Post(base+"/v1/completions", `{"prompt":"x"}`); res.Status != 200 {
			t.Fatalf("router no longer serves: %d", res.Status)
		}
	})
}

// The defaults never cut a legitimate stream, however long it lasts or
// however long its worker pauses between tokens.
func TestLongSlowStreamIsNotCut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		const chunks, gap = 5, 10 * time.Minute
		ln := e.listen()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.Copy(io.Discard, req.Body)
			if req.URL.Path == "/health" {
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			for i := range chunks {
				if i > 0 {
					time.Sleep(gap)
				}
				fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\"}]}\n\n", i)
				_ = rc.Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		cfg := testConfig("round_robin", "http://"+ln.Addr().String())
		cfg.RequestTimeoutSecs = 3600
		cfg.HealthCheck.IntervalSecs = 3600
		cfg.HealthCheck.TimeoutSecs = 5
		r, base := e.router(cfg)
		start := time.Now()
		res := e.Post(base+"/v1/completions", `{"prompt":"x","stream":true}`)
		if res.Status != 200 || res.Err != nil || !strings.Contains(res.Body, "t4") || !strings.HasSuffix(res.Body, "[DONE]\n\n") {
			t.Fatalf("long stream → %d %v %q", res.Status, res.Err, res.Body)
		}
		if got := time.Since(start); got != (chunks-1)*gap {
			t.Errorf("stream took %v, want %v", got, (chunks-1)*gap)
		}
		synctest.Wait()
		wantLoads(t, r, map[string]int64{"http://" + ln.Addr().String(): 0})
	})
}
