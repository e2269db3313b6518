package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/target"
)

// Provisioner starts workers as child processes.
type Provisioner struct {
	opts Options
	tmpl Template
	log  *slog.Logger
	// afterFunc calls f once d has passed (time.AfterFunc); tests replace
	// it to decide when a startup timeout fires.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

var _ target.Provisioner = (*Provisioner)(nil)

// New checks the options and fills in defaults.
func New(opts Options) (*Provisioner, error) {
	tmpl, err := ParseTemplate(opts.Command)
	if err != nil {
		return nil, fmt.Errorf("process target command: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Env)) {
		if err := CheckEnvValue(opts.Env[k]); err != nil {
			return nil, fmt.Errorf("process target env %s: %w", k, err)
		}
	}
	opts.Default()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	after := func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	return &Provisioner{opts: opts, tmpl: tmpl, log: log, afterFunc: after}, nil
}

// Provision starts one process per worker, all at once, and waits until
// every one is healthy. The first worker that fails to start stops the
// others; its *target.StartupError is returned.
func (p *Provisioner) Provision(ctx context.Context, topo target.Topology) (*target.Deployment, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	logDir := p.opts.LogDir
	if logDir == "" {
		dir, err := os.MkdirTemp("", "autoinfer-workers-")
		if err != nil {
			return nil, fmt.Errorf("creating log directory: %w", err)
		}
		logDir = dir
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}

	var members []target.Member
	stopAll := func() error { return target.StopAll(context.WithoutCancel(ctx), members) }
	var workers []*worker
	for i, slot := range topo.Slots() {
		pr, err := p.start(slot, i, topo, logDir)
		if err != nil {
			return nil, errors.Join(err, stopAll())
		}
		w := &worker{p: p, cur: pr}
		workers = append(workers, w)
		members = append(members, w)
	}

	g, gctx := errgroup.WithContext(ctx)
	for _, w := range workers {
		g.Go(func() error { return p.waitReady(gctx, w.cur) })
	}
	if err := g.Wait(); err != nil {
		// Stopping must finish even when ctx is what failed.
		return nil, errors.Join(err, stopAll())
	}
	ws := make([]target.Worker, len(workers))
	for i, w := range workers {
		ws[i] = w.cur.worker
	}
	return target.NewDeployment(ws, members), nil
}

// start launches one worker.
func (p *Provisioner) start(slot target.Worker, index int, topo target.Topology, logDir string) (*proc, error) {
	port, err := target.FreePort(p.opts.Host)
	if err != nil {
		return nil, err
	}
	vars := Vars{
		Model: topo.Engine.Model, Host: p.opts.Host, Port: port, EngineArgs: topo.Engine.Args(),
		Role: slot.Role, Rank: slot.Rank, Index: index,
	}
	w := slot
	w.URL = "http://" + net.JoinHostPort(p.opts.Host, strconv.Itoa(port))
	w.LogPath = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", slot.Role, slot.Rank))
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(p.opts.Env)) {
		env = append(env, k+"="+vars.Expand(p.opts.Env[k]))
	}
	pr, err := startProc(w, p.tmpl.Argv(vars), env, false)
	if err != nil {
		return nil, err
	}
	p.log.Info("worker started", "worker", w.String(), "pid", pr.cmd.Process.Pid, "log", w.LogPath)
	return pr, nil
}

// waitReady waits for pr's health endpoint within the startup timeout.
func (p *Provisioner) waitReady(ctx context.Context, pr *proc) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer p.afterFunc(p.opts.StartupTimeout, cancel)()
	err := target.Health{Client: &http.Client{Timeout: 5 * time.Second}}.Wait(wctx, pr.worker.URL+p.opts.HealthPath, pr.done)
	if err == nil {
		p.log.Info("worker healthy", "worker", pr.worker.String())
		return nil
	}
	select {
	case <-pr.done:
		return &target.StartupError{Worker: pr.worker, Reason: "exited during startup", Err: pr.waitErr, LogTail: tail(pr.worker.LogPath)}
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for worker %s: %w", pr.worker, ctx.Err())
	}
	return &target.StartupError{
		Worker:  pr.worker,
		Reason:  fmt.Sprintf("not healthy after %s (GET %s)", p.opts.StartupTimeout, p.opts.HealthPath),
		Err:     errors.Unwrap(err),
		LogTail: tail(pr.worker.LogPath),
	}
}
