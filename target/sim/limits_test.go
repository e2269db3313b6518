package sim_test

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

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// The server's limits run on a synctest bubble's fake clock, so each
// timeout is seen to fire exactly when due and never earlier.

func dialRaw(t *testing.T, n *simtest.Network, url string) net.Conn {
	t.Helper()
	c, err := n.DialContext(context.Background(), "tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

func TestTrickledBodyIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{})
		c := dialRaw(t, n, w.URL)
		start := time.Now()
		if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: s\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // one byte every 2 s
			defer close(done)
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
		defer func() { close(stop); _ = c.Close(); <-done }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "read timeout") {
			t.Fatalf("trickled body → %d %s, want 408", resp.StatusCode, body)
		}
		if got := time.Since(start); got != sim.DefaultBodyReadTimeout {
			t.Errorf("cut after %v, want exactly %v", got, sim.DefaultBodyReadTimeout)
		}
	})
}

func TestSilentAndIdleConnectionsAreClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{Limits: sim.Limits{IdleTimeout: 50 * time.Second}})
		silent := dialRaw(t, n, w.URL)
		if closedWithin(silent, sim.DefaultReadHeaderTimeout-time.Second) || !closedWithin(silent, 2*time.Second) {
			t.Fatal("a silent connection must be closed at the read-header timeout, not before")
		}
		c := dialRaw(t, n, w.URL)
		br := bufio.NewReader(c)
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: s\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		time.Sleep(49 * time.Second)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("keep-alive connection idle past the idle timeout: read %v, want EOF", err)
		}
	})
}

// A body over the bound gets 413, announced or chunked, and the server
// still serves.
func TestOversizedBodyIs413(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{Limits: sim.Limits{MaxBodyBytes: 1000}})
		client := &http.Client{Transport: &http.Transport{DialContext: n.DialContext}}
		big := fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, strings.Repeat("x", 2000))
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(body) // unknown length: sent chunked
			}
			resp, err := client.Post(w.URL+"/v1/completions", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "exceeds 1000 bytes") {
				t.Errorf("chunked %v: %d %s, want 413", chunked, resp.StatusCode, b)
			}
		}
		resp, err := client.Post(w.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":2}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("after the refusals: %d", resp.StatusCode)
		}
		client.CloseIdleConnections()
	})
}

// A stream far longer than every timeout, read as it comes, is never cut.
func TestLongStreamIsNotCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		p, err := sim.LookupProfile("fast")
		if err != nil {
			t.Fatal(err)
		}
		p.StepBaseMs = 100 // 400 tokens: 40 s, four times every timeout below
		w := simtest.StartPipe(t, n, sim.Options{Profile: p,
			Limits: sim.Limits{WriteIdleTimeout: 10 * time.Second, BodyReadTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second}})
		client := &http.Client{Transport: &http.Transport{DialContext: n.DialContext}}
		start := time.Now()
		resp, err := client.Post(w.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"hi","max_tokens":400,"ignore_eos":true,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.Contains(string(b), "[DONE]") || strings.Count(string(b), "data: ") < 400 {
			t.Fatalf("stream cut after %v: %v, %d events", time.Since(start), err, strings.Count(string(b), "data: "))
		}
		if time.Since(start) < 30*time.Second {
			t.Errorf("the stream took %v: it must outlast the timeouts for the test to mean anything", time.Since(start))
		}
		client.CloseIdleConnections()
	})
}
