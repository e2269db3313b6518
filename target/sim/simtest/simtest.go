package simtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
)

// DefaultModel is the served model name when opts.Engine.Model is empty.
const DefaultModel = "sim-llama-3-8b"

// Start serves a simulated engine on 127.0.0.1 and returns its base URL
// ("http://127.0.0.1:port"). Empty opts.Engine.Model becomes DefaultModel and
// an unset profile the "fast" one. The server stops at test cleanup.
func Start(t testing.TB, opts sim.Options) string {
	t.Helper()
	return StartStoppable(t, opts).URL
}

// Worker is a simulated engine a test can stop (as if killed) and restart on
// the same port.
type Worker struct {
	URL  string
	Addr string // host:port

	t      testing.TB
	opts   sim.Options
	listen ListenFunc

	mu     sync.Mutex
	srv    *sim.Server
	cancel context.CancelFunc
	done   chan error
}

// ListenFunc binds address on some network, or a new address when address
// is "".
type ListenFunc func(address string) (net.Listener, error)

// StartStoppable is Start returning a Worker handle.
func StartStoppable(t testing.TB, opts sim.Options) *Worker {
	t.Helper()
	return StartStoppableOn(t, listenTCP, opts)
}

// StartStoppableOn is StartStoppable on another network, such as an
// in-memory one inside a testing/synctest bubble: the worker listens with
// listen, and Restart binds its address there again. The engine's KV side
// channel is opts.KVNetwork, which the caller puts on the same network.
func StartStoppableOn(t testing.TB, listen ListenFunc, opts sim.Options) *Worker {
	t.Helper()
	opts = defaults(t, opts)
	ln, err := listen("")
	if err != nil {
		t.Fatalf("simtest: listen: %v", err)
	}
	w := &Worker{Addr: ln.Addr().String(), t: t, opts: opts, listen: listen}
	w.URL = "http://" + w.Addr
	if err := w.serve(ln); err != nil {
		ln.Close()
		t.Fatalf("simtest: %v", err)
	}
	t.Cleanup(w.shutdown)
	return w
}

// defaults fills the model name and profile a test left empty and turns
// the admin routes on: tests drive faults over HTTP as trials do.
func defaults(t testing.TB, opts sim.Options) sim.Options {
	t.Helper()
	opts.EnableAdmin = true
	if opts.Engine.Model == "" {
		opts.Engine.Model = DefaultModel
	}
	if opts.Profile.Name == "" {
		p, err := sim.LookupProfile("fast")
		if err != nil {
			t.Fatal(err)
		}
		opts.Profile = p
	}
	return opts
}

func (w *Worker) serve(ln net.Listener) error {
	srv, err := sim.New(w.opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	w.mu.Lock()
	w.srv, w.cancel, w.done = srv, cancel, done
	w.mu.Unlock()
	return nil
}

// Server is the running server (a new one after each Restart).
func (w *Worker) Server() *sim.Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.srv
}

// SetFaults changes the running server's faults.
func (w *Worker) SetFaults(f sim.Faults) { w.Server().SetFaults(f) }

// Stop kills the worker: open connections are cut and the port closes. It
// returns once the port is closed. Stopping a stopped worker does nothing.
func (w *Worker) Stop() {
	w.t.Helper()
	w.mu.Lock()
	srv, done, cancel := w.srv, w.done, w.cancel
	w.srv, w.done = nil, nil
	w.mu.Unlock()
	if srv == nil {
		return
	}
	srv.SetFaults(sim.Faults{Crash: true})
	if err := <-done; err != nil && !errors.Is(err, sim.ErrCrashed) {
		w.t.Errorf("simtest: worker %s stopped with %v", w.URL, err)
	}
	cancel()
}

// Restart starts a fresh engine (empty caches, no faults but the initial
// ones) on the same port. The worker must be stopped.
func (w *Worker) Restart() {
	w.t.Helper()
	w.mu.Lock()
	running := w.srv != nil
	w.mu.Unlock()
	if running {
		w.t.Fatalf("simtest: Restart of running worker %s", w.URL)
	}
	ln, err := w.listen(w.Addr)
	if err != nil {
		w.t.Fatalf("simtest: restart %s: %v", w.URL, err)
	}
	if err := w.serve(ln); err != nil {
		ln.Close()
		w.t.Fatalf("simtest: restart %s: %v", w.URL, err)
	}
}

// listenTCP binds a new 127.0.0.1 port, or addr again: the old socket can
// take a moment to go.
func listenTCP(addr string) (net.Listener, error) {
	if addr == "" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var err error
	for backoff := time.Millisecond; backoff < 2*time.Second; backoff *= 2 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(backoff)
	}
	return nil, fmt.Errorf("binding %s again: %w", addr, err)
}

func (w *Worker) shutdown() {
	w.mu.Lock()
	done, cancel := w.done, w.cancel
	w.srv, w.done = nil, nil
	w.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, sim.ErrCrashed) {
		w.t.Errorf("simtest: worker %s: %v", w.URL, err)
	}
}
