package target

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// fakeMember records calls; stop and restart, when set, replace the default
// behaviour (return nil at once).
type fakeMember struct {
	stops    atomic.Int32
	stop     func(context.Context) error
	restart  func(context.Context) error
	exited   atomic.Bool
	inflight atomic.Int32 // calls running now, to catch overlaps
	overlap  atomic.Bool
}

func (m *fakeMember) enter() func() {
	if m.inflight.Add(1) > 1 {
		m.overlap.Store(true)
	}
	return func() { m.inflight.Add(-1) }
}

func (m *fakeMember) Stop(ctx context.Context) error {
	defer m.enter()()
	m.stops.Add(1)
	if m.stop != nil {
		return m.stop(ctx)
	}
	return nil
}

func (m *fakeMember) Restart(ctx context.Context) error {
	defer m.enter()()
	if m.restart != nil {
		return m.restart(ctx)
	}
	return nil
}

func (m *fakeMember) Exited() (Exit, bool) {
	defer m.enter()()
	return Exit{Reason: "crashed"}, m.exited.Load()
}

// stopOnly is a member that can neither restart nor report exits.
type stopOnly struct{}

func (stopOnly) Stop(context.Context) error { return nil }

func workers(n int) []Worker {
	ws := make([]Worker, n)
	for i := range ws {
		ws[i] = Worker{Role: Collocated, Rank: i, URL: "http://w" + string(rune('0'+i))}
	}
	return ws
}

func TestDeploymentURLs(t *testing.T) {
	d := NewDeployment([]Worker{
		{Role: Prefill, URL: "http://p0"}, {Role: Decode, URL: "http://d0"}, {Role: Prefill, Rank: 1, URL: "http://p1"},
	}, nil)
	if got := d.URLs(Prefill); !slices.Equal(got, []string{"http://p0", "http://p1"}) {
		t.Errorf("prefill URLs = %v", got)
	}
	if got := d.URLs(Collocated); got != nil {
		t.Errorf("collocated URLs = %v, want none", got)
	}
}

// Close stops every member once, in parallel, and every call (also
// concurrent ones) returns the first call's result.
func TestDeploymentCloseOnceInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3
		var arrived sync.WaitGroup
		arrived.Add(n)
		ms := make([]*fakeMember, n)
		members := make([]Member, n)
		for i := range ms {
			ms[i] = &fakeMember{stop: func(context.Context) error {
				// Every Stop waits for all the others to have begun: this
				// returns only if the stops run in parallel.
				arrived.Done()
				arrived.Wait()
				if i == 1 {
					return errors.New("teardown failed")
				}
				return nil
			}}
			members[i] = ms[i]
		}
		d := NewDeployment(workers(n), members)
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = d.Close(t.Context()) })
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil || err.Error() != "teardown failed" {
				t.Errorf("Close call %d = %v, want the first result", i, err)
			}
		}
		for i, m := range ms {
			if got := m.stops.Load(); got != 1 {
				t.Errorf("member %d stopped %d times, want 1", i, got)
			}
		}
	})
	if err := NewDeployment(workers(2), nil).Close(t.Context()); err != nil {
		t.Errorf("a deployment without members: %v", err)
	}
}

func TestDeploymentRestart(t *testing.T) {
	m := &fakeMember{}
	d := NewDeployment(workers(2), []Member{m, stopOnly{}})
	if err := d.Restart(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(t.Context(), 1); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Restart of a member without Restart: %v, want ErrUnsupported", err)
	}
	if err := NewDeployment(workers(1), nil).Restart(t.Context(), 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Restart without members: %v, want ErrUnsupported", err)
	}
	if err := d.Restart(t.Context(), 2); err == nil || !strings.Contains(err.Error(), "no worker 2") {
		t.Errorf("Restart of a missing worker: %v", err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.restart = func(context.Context) error { t.Error("Restart after Close reached the member"); return nil }
	if err := d.Restart(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Restart after Close: %v, want an error saying the deployment is closed", err)
	}
	if m.overlap.Load() {
		t.Error("member calls overlapped")
	}
}

// Close cancels a restart in flight and waits for it before stopping the
// member, so the server the restart started is the one stopped.
func TestDeploymentCloseCancelsRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		m := &fakeMember{restart: func(ctx context.Context) error {
			close(started)
			<-ctx.Done() // a worker that never becomes healthy
			return ctx.Err()
		}}
		d := NewDeployment(workers(1), []Member{m})
		restartErr := make(chan error, 1)
		go func() { restartErr <- d.Restart(context.Background(), 0) }()
		<-started
		if err := d.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		err := <-restartErr
		if err == nil || !strings.Contains(err.Error(), "closing") {
			t.Errorf("restart cut by Close: %v, want it to say the deployment is closing", err)
		}
		if m.stops.Load() != 1 || m.overlap.Load() {
			t.Errorf("stops %d, overlap %v: want one Stop after the restart returned", m.stops.Load(), m.overlap.Load())
		}
	})
}

// Exits lists crashed members only: not one being restarted on purpose,
// and none once Close began.
func TestDeploymentExitsCrashesOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inRestart := make(chan struct{})
		crashed := &fakeMember{}
		restarting := &fakeMember{restart: func(context.Context) error {
			close(inRestart)
			<-release
			return nil
		}}
		d := NewDeployment(workers(3), []Member{crashed, restarting, stopOnly{}})
		if ex := d.Exits(); len(ex) != 0 {
			t.Fatalf("exits of a healthy deployment: %+v", ex)
		}
		crashed.exited.Store(true)
		restarting.exited.Store(true) // its old server ended: the restart's doing
		go func() { _ = d.Restart(t.Context(), 1) }()
		<-inRestart
		if ex := d.Exits(); len(ex) != 1 || ex[0].Reason != "crashed" {
			t.Fatalf("exits during a restart: %+v, want only the crashed member", ex)
		}
		close(release)
		synctest.Wait()
		restarting.exited.Store(false)
		if err := d.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ex := d.Exits(); len(ex) != 0 {
			t.Fatalf("exits after Close: %+v", ex)
		}
	})
}
