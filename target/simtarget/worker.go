package simtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
)

// simWorker is the deployment's member for one engine slot: the server
// currently serving its address and the goroutine running it. The
// deployment serialises its methods; Serve's result crosses goroutines
// through done (written before done is closed, read after).
type simWorker struct {
	worker target.Worker
	addr   string
	opts   sim.Options

	// mu guards srv, observe and steps between ObserveRequests,
	// ObserveSteps and a restart.
	mu      sync.Mutex
	srv     *sim.Server
	observe func(sim.RequestTiming)
	steps   func(sim.StepTiming)
	cancel  context.CancelFunc
	done    chan struct{} // closed when Serve returned
	err     error         // Serve's result, valid after done
}

var (
	_ target.Restarter = (*simWorker)(nil)
	_ target.Exiter    = (*simWorker)(nil)
)

// start serves a new engine on ln and waits until it answers /health.
func (w *simWorker) start(ctx context.Context, ln net.Listener) error {
	srv, err := sim.New(w.opts)
	if err != nil {
		return &target.StartupError{Worker: w.worker, Reason: "invalid engine options", Err: err}
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.mu.Lock()
	w.srv, w.cancel, w.done = srv, cancel, done
	srv.ObserveRequests(w.observe)
	srv.ObserveSteps(w.steps)
	w.mu.Unlock()
	go func() {
		w.err = srv.Serve(sctx, ln)
		close(done)
	}()
	hctx, hcancel := context.WithTimeout(ctx, readyTimeout)
	defer hcancel()
	if err := (target.Health{}).Wait(hctx, w.worker.URL+target.DefaultHealthPath, done); err != nil {
		cancel()
		<-done
		return &target.StartupError{Worker: w.worker, Reason: "simulated engine not healthy", Err: errors.Join(err, w.err)}
	}
	return nil
}

// Stop shuts the engine down: gracefully (in-flight requests may finish,
// bounded by the engine's own shutdown grace) or, when ctx is already done,
// by cutting its connections. It returns Serve's error; a crash injected
// with the Crash fault is not an error of the deployment.
func (w *simWorker) Stop(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	// Either a crash or a cancel ends Serve; sending both would leave the
	// choice to Serve's select.
	if ctx.Err() != nil {
		w.srv.SetFaults(sim.Faults{Crash: true})
	} else {
		w.cancel()
	}
	<-w.done
	w.cancel()
	if w.err != nil && !errors.Is(w.err, sim.ErrCrashed) {
		return fmt.Errorf("worker %s: %w", w.worker, w.err)
	}
	return nil
}

// Restart crashes the engine (connections cut at once) and serves a fresh
// one, with an empty cache, on the same address.
func (w *simWorker) Restart(ctx context.Context) error {
	w.srv.SetFaults(sim.Faults{Crash: true})
	select {
	case <-w.done:
	case <-ctx.Done():
		return fmt.Errorf("restarting %s: %w", w.worker, ctx.Err())
	}
	ln, err := net.Listen("tcp", w.addr)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", w.worker, err)
	}
	if err := w.start(ctx, ln); err != nil {
		_ = ln.Close()
		return err
	}
	return nil
}

// ObserveRequests passes the engine timings of every request the worker
// answers to fn (sim.Server.ObserveRequests), also from an engine a
// restart serves; nil stops. The engines run in this process, on the
// client's clock, so the timings compare with the client's own.
func (w *simWorker) ObserveRequests(fn func(sim.RequestTiming)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observe = fn
	if w.srv != nil {
		w.srv.ObserveRequests(fn)
	}
}

// ObserveSteps passes every engine step's planned end and completion to fn
// (sim.Server.ObserveSteps), also from an engine a restart serves; nil
// stops.
func (w *simWorker) ObserveSteps(fn func(sim.StepTiming)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = fn
	if w.srv != nil {
		w.srv.ObserveSteps(fn)
	}
}

// Exited reports the engine's end when nothing meant to stop it (a Crash
// fault, or Serve failing).
func (w *simWorker) Exited() (target.Exit, bool) {
	select {
	case <-w.done:
	default:
		return target.Exit{}, false
	}
	reason := "stopped serving"
	if errors.Is(w.err, sim.ErrCrashed) {
		reason = "crashed"
	} else if w.err != nil {
		reason = w.err.Error()
	}
	return target.Exit{Worker: w.worker, ExitCode: -1, Reason: reason}, true
}
