package driver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// scriptClock is a clock the scripted server moves: before writing an event
// it sets the time the event "arrives" at, then waits until the client has
// read the clock (the driver timestamps each SSE data event once, on
// arrival), so every measured time is exactly the scripted one.
type scriptClock struct {
	mu   sync.Mutex
	t    time.Time
	seen chan struct{}
}

func newScriptClock() *scriptClock {
	return &scriptClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), seen: make(chan struct{}, 1)}
}

func (c *scriptClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
	return c.t
}

// advance moves the clock by d and forgets earlier reads.
func (c *scriptClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	select {
	case <-c.seen:
	default:
	}
}

// awaitRead blocks until the client has read the clock since the last
// advance; a bounded wait turns a driver that stops reading into a failure
// instead of a hang.
func (c *scriptClock) awaitRead(t *testing.T) {
	select {
	case <-c.seen:
	case <-time.After(5 * time.Second):
		t.Error("the client did not read the clock for a scripted event within 5 s")
	}
}

// event is one scripted SSE event: after the given gap, this data.
type event struct {
	gap  time.Duration
	data string
}

// playScript writes prelude, then events as SSE, moving clock before each.
func playScript(t *testing.T, w http.ResponseWriter, clock *scriptClock, prelude string, events []event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, prelude)
	fl := w.(http.Flusher)
	for _, e := range events {
		clock.advance(e.gap)
		fmt.Fprintf(w, "data: %s\n\n", e.data)
		fl.Flush()
		clock.awaitRead(t)
	}
}

func serve(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
