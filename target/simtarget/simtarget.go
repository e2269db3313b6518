package simtarget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	var members []target.Member
	var workers []target.Worker
	for _, slot := range topo.Slots() {
		ln, err := net.Listen("tcp", net.JoinHostPort(p.opts.Host, "0"))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listening for %s worker: %w", slot.Role, err), target.StopAll(ctx, members))
		}
		slot.URL = "http://" + ln.Addr().String()
		e := &simWorker{worker: slot, addr: ln.Addr().String(), opts: sim.Options{
			Engine: topo.Engine, Profile: p.opts.Profile, Role: sim.Role(slot.Role),
			Logger: p.opts.Logger.With("worker", slot.String()),
		}}
		if err := e.start(ctx, ln); err != nil {
			_ = ln.Close()
			return nil, errors.Join(err, target.StopAll(ctx, members))
		}
		members = append(members, e)
		workers = append(workers, slot)
	}
	return target.NewDeployment(workers, members), nil
}
