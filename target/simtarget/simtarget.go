package simtarget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
)

// readyTimeout bounds the health check of a freshly started engine; an
// in-process engine answers at once unless something is badly wrong.
const readyTimeout = 10 * time.Second

// Options configure the simulated engines.
type Options struct {
	// Profile is the hardware model (see ResolveProfile).
	Profile sim.Profile
	// Host to listen on; default 127.0.0.1.
	Host string
	// Logger is passed to every engine; nil discards.
	Logger *slog.Logger
}

// Provisioner serves simulated engines in this process.
type Provisioner struct{ opts Options }

var _ target.Provisioner = (*Provisioner)(nil)

// New fills in defaults.
func New(opts Options) *Provisioner {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Provisioner{opts: opts}
}

// Provision starts one engine per worker with topo.Engine and the role of
// its slot. The deployment supports Restart.
func (p *Provisioner) Provision(ctx context.Context, topo target.Topology) (*target.Deployment, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	var engines []*simWorker
	stopAll := func(ctx context.Context) error {
		errs := make([]error, len(engines))
		var wg sync.WaitGroup
		for i, e := range engines {
			wg.Go(func() { errs[i] = e.stop(ctx) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for _, slot := range topo.Slots() {
		ln, err := net.Listen("tcp", net.JoinHostPort(p.opts.Host, "0"))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listening for %s worker: %w", slot.Role, err), stopAll(ctx))
		}
		slot.URL = "http://" + ln.Addr().String()
		e := &simWorker{worker: slot, addr: ln.Addr().String(), opts: sim.Options{
			Engine: topo.Engine, Profile: p.opts.Profile, Role: sim.Role(slot.Role),
			Logger: p.opts.Logger.With("worker", slot.String()), EnableAdmin: true, // the trial's own chaos steps

		}}
		if err := e.start(ctx, ln); err != nil {
			_ = ln.Close()
			return nil, errors.Join(err, stopAll(ctx))
		}
		engines = append(engines, e)
	}
	workers := make([]target.Worker, len(engines))
	for i, e := range engines {
		workers[i] = e.worker
	}
	exits := func() []target.Exit {
		var out []target.Exit
		for _, e := range engines {
			if x, ok := e.exited(); ok {
				out = append(out, x)
			}
		}
		return out
	}
	d := target.NewDeployment(workers, stopAll).WithExits(exits)
	return d.WithRestart(func(ctx context.Context, i int) error { return engines[i].restart(ctx) }), nil
}

// simWorker is one engine slot: the server currently serving its address
// and the goroutine running it.
type simWorker struct {
	worker target.Worker
	addr   string
	opts   sim.Options

	mu     sync.Mutex
	srv    *sim.Server
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned
	err    error         // Serve's result, valid after done
	// closed is set by stop; start refuses afterwards, so a Restart racing
	// with Close cannot leave an engine running that nobody stops.
	closed bool
	// restarting is set while restart replaces the engine: its end then is
	// deliberate, not an exit.
	restarting bool
}

// exited reports the engine's end when nothing meant to stop it (a Crash
// fault, or Serve failing).
func (w *simWorker) exited() (target.Exit, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.restarting || w.done == nil {
		return target.Exit{}, false
	}
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

// start serves a new engine on ln and waits until it answers /health.
func (w *simWorker) start(ctx context.Context, ln net.Listener) error {
	srv, err := sim.New(w.opts)
	if err != nil {
		return &target.StartupError{Worker: w.worker, Reason: "invalid engine options", Err: err}
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		cancel()
		return fmt.Errorf("starting %s: the deployment is closed", w.worker)
	}
	w.srv, w.cancel, w.done = srv, cancel, done
	w.mu.Unlock()
	go func() {
		err := srv.Serve(sctx, ln)
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		close(done)
	}()
	hctx, hcancel := context.WithTimeout(ctx, readyTimeout)
	defer hcancel()
	if err := (target.Health{}).Wait(hctx, w.worker.URL+target.DefaultHealthPath, done); err != nil {
		cancel()
		<-done
		return &target.StartupError{Worker: w.worker, Reason: "simulated engine not healthy", Err: errors.Join(err, w.serveErr())}
	}
	return nil
}

// stop shuts the engine down: gracefully (in-flight requests may finish,
// bounded by the engine's own shutdown grace) or, when ctx is already done,
// by cutting its connections. It returns Serve's error; a crash injected
// with the Crash fault is not an error of the deployment.
func (w *simWorker) stop(ctx context.Context) error {
	w.mu.Lock()
	srv, cancel, done := w.srv, w.cancel, w.done
	w.closed = true
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	// Either a crash or a cancel ends Serve; sending both would leave the
	// choice to Serve's select.
	if ctx.Err() != nil {
		srv.SetFaults(sim.Faults{Crash: true})
	} else {
		cancel()
	}
	<-done
	cancel()
	if err := w.serveErr(); err != nil && !errors.Is(err, sim.ErrCrashed) {
		return fmt.Errorf("worker %s: %w", w.worker, err)
	}
	return nil
}

func (w *simWorker) serveErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// restart crashes the engine (connections cut at once) and serves a fresh
// one, with an empty cache, on the same address.
func (w *simWorker) restart(ctx context.Context) error {
	w.mu.Lock()
	srv, done := w.srv, w.done
	w.restarting = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.restarting = false
		w.mu.Unlock()
	}()
	srv.SetFaults(sim.Faults{Crash: true})
	select {
	case <-done:
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
