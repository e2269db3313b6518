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
//
// It counts reads rather than holding a one-slot "read" flag: with one
// request at a time, the next request's handler may advance the clock
// before the previous handler has noticed the read of its last event, and
// a flag cleared by that advance would leave the previous handler waiting
// for a read that already happened.
type scriptClock struct {
	mu    sync.Mutex
	t     time.Time
	reads uint64
	read  chan struct{} // closed and replaced on every read
}

func newScriptClock() *scriptClock {
	return &scriptClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), read: make(chan struct{})}
}

func (c *scriptClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	close(c.read)
	c.read = make(chan struct{})
	return c.t
}

// advance moves the clock by d and returns the read count so far, for
// awaitRead.
func (c *scriptClock) advance(d time.Duration) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.reads
}

// awaitRead blocks until the client has read the clock more than mark
// times; a bounded wait turns a driver that stops reading into a failure
// instead of a hang.
func (c *scriptClock) awaitRead(t *testing.T, mark uint64) {
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		n, read := c.reads, c.read
		c.mu.Unlock()
		if n > mark {
			return
		}
		select {
		case <-read:
		case <-deadline:
			t.Error("the client did not read the clock for a scripted event within 5 s")
			return
		}
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
		mark := clock.advance(e.gap)
		fmt.Fprintf(w, "data: %s\n\n", e.data)
		fl.Flush()
		clock.awaitRead(t, mark)
	}
}

func serve(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
