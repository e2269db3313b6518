package driver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// A stream read to its [DONE] leaves its connection for the next request,
// as vllm bench serve's keep-alive session does: closing the body unread
// made the transport drop the connection, so every request dialled anew
// and its TTFT carried a connect.
func TestStreamsReuseTheirConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		// Flushed event by event, as an engine streams: the body's end
		// comes after [DONE], in a write of its own.
		for _, e := range []string{`{"choices":[{"index":0,"text":"ok"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1}}`, "[DONE]"} {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		// The body ends a little after [DONE], or when the client hangs
		// up: a client that closes its body unread leaves no doubt.
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Millisecond):
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	const n = 30
	cfg := driver.Config{BaseURL: srv.URL, Model: "m", NumPrompts: n, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Arrival:  driver.Arrival{MaxConcurrency: 1},
		Workload: driver.Workload{Kind: "random", InputLen: 4, OutputLen: 1}}
	res, err := driver.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != n {
		t.Fatalf("%d of %d requests completed", res.Summary.Completed, n)
	}
	// One request at a time: one connection serves them all (two allow
	// for a connection the server or transport retired in between).
	if c := conns.Load(); c > 2 {
		t.Errorf("%d requests one at a time opened %d connections, want 1", n, c)
	}
}
