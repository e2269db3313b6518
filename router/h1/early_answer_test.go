package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// A worker that refuses a body before reading it (413) and closes makes the
// request's write fail; the answer it sent is still what RoundTrip
// returns, so the caller relays a refusal instead of counting a broken
// pipe against the worker.
func TestAnswerBeforeTheBodyIsWritten(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big")
		// Closed with the body unread: the client's writes then fail.
	})
	body := strings.Repeat("a", 64<<20)
	resp := post(context.Background(), t, newTransport(nil), "http://"+ln.Addr().String()+"/v1/completions", body)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || string(got) != "too big" || err != nil {
		t.Fatalf("got %d %q (%v), want the worker's 413", resp.StatusCode, got, err)
	}
	if !resp.Close {
		t.Error("the connection would be reused after a broken write")
	}
}
