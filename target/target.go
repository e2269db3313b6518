package target

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/autoinfer/autoinfer/target/engine"
)

// Role is what a worker does in a deployment.
type Role string

// The three roles. A deployment is either all collocated workers or a mix of
// prefill and decode workers (prefill/decode disaggregation).
const (
	Collocated Role = "collocated"
	Prefill    Role = "prefill"
	Decode     Role = "decode"
)

// Topology is what a trial asks a target for: how many workers of each role,
// all running the same engine configuration.
type Topology struct {
	// Replicas is the number of collocated workers; 0 when Prefill and
	// Decode are set.
	Replicas int
	Prefill  int
	Decode   int
	Engine   engine.Config
}

// PD reports whether the topology disaggregates prefill and decode.
func (t Topology) PD() bool { return t.Prefill > 0 || t.Decode > 0 }

// Validate checks the counts: either replicas, or both prefill and decode.
func (t Topology) Validate() error {
	switch {
	case t.Replicas < 0 || t.Prefill < 0 || t.Decode < 0:
		return errors.New("topology: counts must not be negative")
	case t.PD() && t.Replicas > 0:
		return errors.New("topology: replicas and prefill/decode are mutually exclusive")
	case t.PD() && (t.Prefill == 0 || t.Decode == 0):
		return errors.New("topology: prefill/decode needs at least one worker of each role")
	case !t.PD() && t.Replicas == 0:
		return errors.New("topology: needs at least one worker")
	}
	return nil
}

// Slots lists the workers a topology asks for in the order every target
// provisions them: collocated, then prefill, then decode, each by rank.
// The URL fields are empty; targets fill them in.
func (t Topology) Slots() []Worker {
	var ws []Worker
	add := func(r Role, n int) {
		for i := range n {
			ws = append(ws, Worker{Role: r, Rank: i})
		}
	}
	add(Collocated, t.Replicas)
	add(Prefill, t.Prefill)
	add(Decode, t.Decode)
	return ws
}

// Worker is one provisioned inference server.
type Worker struct {
	Role Role
	// Rank is the worker's index within its role (prefill 0, prefill 1, …).
	Rank int
	// URL is the base URL without a trailing slash, e.g. http://127.0.0.1:8100.
	URL string
	// LogPath is the file the worker's output goes to, when the target
	// captures it (process target); empty otherwise.
	LogPath string
}

// String names the worker in errors and logs: "prefill[1] http://…".
func (w Worker) String() string { return fmt.Sprintf("%s[%d] %s", w.Role, w.Rank, w.URL) }

// Deployment is a provisioned set of workers. Close tears down whatever the
// target started; it is safe to call more than once and from several
// goroutines, and every call returns the first call's result.
type Deployment struct {
	Workers []Worker

	close   func(context.Context) error
	restart func(context.Context, int) error
	exits   func() []Exit
	once    sync.Once
	err     error
}

// NewDeployment is for targets: close tears the workers down (nil when there
// is nothing to tear down). ctx bounds how long a graceful stop may take;
// close must still release everything when ctx is done.
func NewDeployment(workers []Worker, close func(context.Context) error) *Deployment {
	return &Deployment{Workers: workers, close: close}
}

// WithRestart is for targets that can restart a worker in place; see
// Restart. It returns d.
func (d *Deployment) WithRestart(restart func(ctx context.Context, i int) error) *Deployment {
	d.restart = restart
	return d
}

// WithExits is for targets that own their workers' lifetimes; see Exits.
// It returns d.
func (d *Deployment) WithExits(exits func() []Exit) *Deployment {
	d.exits = exits
	return d
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
}

// Exits lists the workers whose current server has ended although neither
// Close nor Restart stopped it: crashes. Targets that do not own their
// workers (static) report none.
func (d *Deployment) Exits() []Exit {
	if d.exits == nil {
		return nil
	}
	return d.exits()
}

// Restart stops Workers[i] abruptly, as a crash would, and starts a fresh
// one at the same URL, returning once it is healthy. Trials use it to check
// that the router notices a worker going away and coming back. Targets that
// do not own their workers (static) return errors.ErrUnsupported.
func (d *Deployment) Restart(ctx context.Context, i int) error {
	if i < 0 || i >= len(d.Workers) {
		return fmt.Errorf("restart: no worker %d (deployment has %d)", i, len(d.Workers))
	}
	if d.restart == nil {
		return fmt.Errorf("restart %s: %w", d.Workers[i], errors.ErrUnsupported)
	}
	return d.restart(ctx, i)
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

// Close stops every worker the target started.
func (d *Deployment) Close(ctx context.Context) error {
	d.once.Do(func() {
		if d.close != nil {
			d.err = d.close(ctx)
		}
	})
	return d.err
}

// Provisioner starts the workers of a topology. On error it has already
// released everything it started, so callers only Close successful
// deployments. ctx bounds provisioning only: workers outlive it until Close.
type Provisioner interface {
	Provision(ctx context.Context, topo Topology) (*Deployment, error)
}
