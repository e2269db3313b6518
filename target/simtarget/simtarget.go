package simtarget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// readyTimeout bounds the health check of a freshly started engine; an
// in-process engine answers at once unless something is badly wrong.
const readyTimeout = 10 * time.Second

// host is where every engine listens: tests and trials reach them on
// loopback only.
const host = "127.0.0.1"

// Provisioner serves simulated engines in this process.
type Provisioner struct {
	opts Options
	log  *slog.Logger
}

var _ target.Provisioner = (*Provisioner)(nil)

// New checks the options' profile (a derived one is derived again for the
// topology's engine when provisioning); log is passed to every engine (nil
// discards).
func New(opts Options, log *slog.Logger) (*Provisioner, error) {
	opts.Default()
	if opts.ModelConfig == "" {
		if _, err := opts.Resolve(engine.Config{}); err != nil {
			return nil, fmt.Errorf("target.%s: %w", opts.sourceField(), err)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provisioner{opts: opts, log: log}, nil
}

// Provision starts one engine per worker with topo.Engine and the role of
// its slot. The deployment supports Restart.
func (p *Provisioner) Provision(ctx context.Context, topo target.Topology) (*target.Deployment, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	prof, err := p.opts.Resolve(topo.Engine)
	if err != nil {
		return nil, fmt.Errorf("target.%s: %w", p.opts.sourceField(), err)
	}
	kv, err := kvEventsArg(topo.Engine)
	if err != nil {
		return nil, err
	}
	var members []target.Member
	var workers []target.Worker
	for _, slot := range topo.Slots() {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listening for %s worker: %w", slot.Role, err), target.StopAll(ctx, members))
		}
		slot.URL = "http://" + ln.Addr().String()
		e := &simWorker{worker: slot, addr: ln.Addr().String(), opts: sim.Options{
			Engine: topo.Engine, Profile: prof, Role: sim.Role(slot.Role),
			Logger: p.log.With("worker", slot.String()), EnableAdmin: true, // the trial's own chaos steps
			KVEvents: kv,
		}}
		if err := e.start(ctx, ln); err != nil {
			_ = ln.Close()
			return nil, errors.Join(err, target.StopAll(ctx, members))
		}
		members = append(members, e)
		if err := e.publishKVEndpoints(ctx); err != nil {
			return nil, errors.Join(err, target.StopAll(ctx, members))
		}
		workers = append(workers, e.worker)
	}
	return target.NewDeployment(workers, members), nil
}
