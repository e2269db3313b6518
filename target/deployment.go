package target

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Member is the server behind one worker, as a target hands it to its
// Deployment. The deployment serialises calls on a member: Stop, Restart and
// Exited never run at the same time for one member, and none is called
// after Stop.
type Member interface {
	// Stop ends the server: gracefully while ctx lasts, then abruptly. It
	// returns once the server is gone; it must release everything also when
	// ctx is already done.
	Stop(ctx context.Context) error
}

// Restarter is a Member that can be replaced in place: stopped abruptly, as
// a crash would, and started again at the same URL, returning once the new
// server is healthy.
type Restarter interface {
	Restart(ctx context.Context) error
}

// Exiter is a Member that knows when its current server ended although
// nothing stopped it: a crash.
type Exiter interface {
	Exited() (Exit, bool)
}

// Exit is a worker that stopped on its own while the deployment was up.
type Exit struct {
	Worker Worker
	// ExitCode is the process's exit status (-1 when a signal ended it or
	// the worker is in-process).
	ExitCode int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Reason is one line for reports: "exit status 1", "crashed".
	Reason string
	// LogTail is the end of the server's output when the target has it
	// (a process's log, a container's termination message).
	LogTail string
}

// Deployment is a provisioned set of workers and the members that serve
// them. It owns the members' lifecycle: Close stops them all in parallel,
// Restart replaces one, Exits lists the ones that crashed. All methods are
// safe for concurrent use.
type Deployment struct {
	// Workers are the provisioned workers, in Topology.Slots order.
	Workers []Worker
	// Hardware is what the workers run on when the target found out
	// (HardwareReporter targets); nil otherwise.
	Hardware *Hardware
	// Remote, when set, runs the trial's router and driver next to the
	// workers instead of in this process (the kubernetes target's
	// in-cluster runner); nil otherwise.
	Remote RemoteRunner

	members []Member // nil, or one per worker

	mu         sync.Mutex
	closed     bool   // set when Close begins
	restarting []bool // per member: a deliberate restart is under way
	// restarts counts Restart calls in flight; Close waits for them so a
	// server started by a restart is never left running.
	restarts sync.WaitGroup
	// closing is closed when Close begins; it cancels restarts in flight.
	closing chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// NewDeployment is for targets: members serve workers one to one (nil when
// the target started nothing, as static URLs).
func NewDeployment(workers []Worker, members []Member) *Deployment {
	if members != nil && len(members) != len(workers) {
		panic(fmt.Sprintf("target: %d members for %d workers", len(members), len(workers)))
	}
	return &Deployment{Workers: workers, members: members, restarting: make([]bool, len(members)), closing: make(chan struct{})}
}

// Member is the server behind worker i (nil when the target started none),
// for a caller that needs more of it than Member's methods: it asserts the
// interface it needs (a sim worker's request timings). The deployment does
// not serialise such calls with its own.
func (d *Deployment) Member(i int) Member {
	if d.members == nil {
		return nil
	}
	return d.members[i]
}

// URLs returns the base URLs of the workers with role r, by rank.
func (d *Deployment) URLs(r Role) []string {
	var urls []string
	for _, w := range d.Workers {
		if w.Role == r {
			urls = append(urls, w.URL)
		}
	}
	return urls
}

// Close stops every member in parallel. ctx bounds how long graceful stops
// may take. It is safe to call more than once and from several goroutines;
// every call returns the first call's result. Restarts in flight are
// cancelled and waited for first.
func (d *Deployment) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		close(d.closing)
		d.restarts.Wait()
		d.closeErr = StopAll(ctx, d.members)
	})
	return d.closeErr
}

// StopAll stops members in parallel and joins their errors. Targets use it
// to release what they started when provisioning fails half-way.
func StopAll(ctx context.Context, members []Member) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.Stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Restart stops Workers[i] abruptly, as a crash would, and starts a fresh
// one at the same URL, returning once it is healthy. Trials use it to check
// that the router notices a worker going away and coming back. Members that
// cannot restart (static URLs) give errors.ErrUnsupported; after Close,
// Restart fails and starts nothing.
func (d *Deployment) Restart(ctx context.Context, i int) error {
	if i < 0 || i >= len(d.Workers) {
		return fmt.Errorf("restart: no worker %d (deployment has %d)", i, len(d.Workers))
	}
	w := d.Workers[i]
	var r Restarter
	if i < len(d.members) {
		r, _ = d.members[i].(Restarter)
	}
	if r == nil {
		return fmt.Errorf("restart %s: %w", w, errors.ErrUnsupported)
	}
	if err := d.beginRestart(i); err != nil {
		return fmt.Errorf("restarting %s: %w", w, err)
	}
	defer d.endRestart(i)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // ends with rctx, which the deferred cancel guarantees
		select {
		case <-d.closing:
			cancel(errors.New("the deployment is closing"))
		case <-rctx.Done():
		}
	}()
	if err := r.Restart(rctx); err != nil {
		if cause := context.Cause(rctx); cause != nil && ctx.Err() == nil {
			return fmt.Errorf("restarting %s: %w: %w", w, cause, err)
		}
		return err
	}
	return nil
}

// beginRestart marks member i as restarting, unless the deployment is
// closed or the member is already restarting.
func (d *Deployment) beginRestart(i int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return errors.New("the deployment is closed")
	case d.restarting[i]:
		return errors.New("a restart is already under way")
	}
	d.restarting[i] = true
	d.restarts.Add(1) // before Close's Wait: Close sets closed under mu first
	return nil
}

func (d *Deployment) endRestart(i int) {
	d.mu.Lock()
	d.restarting[i] = false
	d.mu.Unlock()
	d.restarts.Done()
}

// Exits lists the workers whose current server has ended although neither
// Close nor Restart stopped it: crashes. Members that do not report exits
// (static URLs) never appear.
func (d *Deployment) Exits() []Exit {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	var out []Exit
	for i, m := range d.members {
		e, ok := m.(Exiter)
		if !ok || d.restarting[i] {
			continue
		}
		if x, ok := e.Exited(); ok {
			out = append(out, x)
		}
	}
	return out
}
