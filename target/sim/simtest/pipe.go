package simtest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
)

// PipeWorker is a simulated engine served on an in-memory Network, for
// tests inside a testing/synctest bubble: the engine's step loop, KV hold
// timers and modelled transfers then run on the bubble's fake clock, so a
// test can hold latencies to the profile exactly.
type PipeWorker struct {
	URL string
	srv *sim.Server

	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Server is the running server.
func (w *PipeWorker) Server() *sim.Server { return w.srv }

// StartPipe serves a simulated engine on n; call it inside the bubble. Empty
// opts fields are defaulted as in Start; opts.KVNetwork defaults to n. The
// server stops at test cleanup (which synctest runs inside the bubble).
func StartPipe(t testing.TB, n *Network, opts sim.Options) *PipeWorker {
	t.Helper()
	opts = defaults(t, opts)
	if opts.KVNetwork == nil {
		opts.KVNetwork = n
	}
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatalf("simtest: %v", err)
	}
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("simtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	w := &PipeWorker{URL: "http://" + ln.Addr().String(), srv: srv, t: t, cancel: cancel, done: done}
	t.Cleanup(func() {
		w.stop(false)
		n.closeIdle()
	})
	return w
}

// Shutdown stops the worker gracefully (as at test cleanup) and returns once
// it has stopped; an error from Serve fails the test.
func (w *PipeWorker) Shutdown() { w.stop(false) }

// Stop kills the worker (a crash fault: connections cut, listener closed)
// and returns once it has stopped. Stopping twice does nothing.
func (w *PipeWorker) Stop() { w.stop(true) }

func (w *PipeWorker) stop(crash bool) {
	w.once.Do(func() {
		if crash {
			w.srv.SetFaults(sim.Faults{Crash: true})
		} else {
			w.cancel()
		}
		if err := <-w.done; err != nil && !errors.Is(err, sim.ErrCrashed) {
			w.t.Errorf("simtest: worker %s: %v", w.URL, err)
		}
		w.cancel()
	})
}

// Client is an HTTP client that dials n. Its idle connections are closed
// when a PipeWorker on n stops, so no goroutine outlives the bubble.
func (n *Network) Client() *http.Client {
	n.clientOnce.Do(func() {
		n.transport = &http.Transport{DialContext: n.DialContext}
	})
	return &http.Client{Transport: n.transport}
}

func (n *Network) closeIdle() {
	if n.transport != nil {
		n.transport.CloseIdleConnections()
	}
}

var _ sim.Network = (*Network)(nil)
