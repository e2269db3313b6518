package static

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/autoinfer/autoinfer/target"
)

// Provisioner hands out the configured URLs after a health check.
type Provisioner struct{ opts Options }

var _ target.Provisioner = (*Provisioner)(nil)

// New fills in defaults.
func New(opts Options) *Provisioner {
	opts.Default()
	return &Provisioner{opts: opts}
}

// Provision checks that topo's counts match the configured URLs, then that
// every worker answers its health path. Each unhealthy worker gets a
// *target.StartupError naming its URL (joined with errors.Join).
func (p *Provisioner) Provision(ctx context.Context, topo target.Topology) (*target.Deployment, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	urls := map[target.Role][]string{target.Collocated: p.opts.Workers, target.Prefill: p.opts.Prefill, target.Decode: p.opts.Decode}
	want := map[target.Role]int{target.Collocated: topo.Replicas, target.Prefill: topo.Prefill, target.Decode: topo.Decode}
	for _, r := range []target.Role{target.Collocated, target.Prefill, target.Decode} {
		if len(urls[r]) != want[r] {
			return nil, fmt.Errorf("static target: topology wants %d %s workers, %d URLs given", want[r], r, len(urls[r]))
		}
	}
	workers := topo.Slots()
	for i := range workers {
		workers[i].URL = strings.TrimRight(urls[workers[i].Role][workers[i].Rank], "/")
	}

	wctx, cancel := context.WithTimeout(ctx, p.opts.HealthTimeout)
	defer cancel()
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			err := target.Health{Client: p.opts.Client}.Wait(wctx, w.URL+p.opts.HealthPath, nil)
			switch {
			case err == nil:
			case ctx.Err() != nil:
				errs[i] = fmt.Errorf("health check of %s: %w", w, ctx.Err())
			default:
				errs[i] = &target.StartupError{
					Worker: w, Err: errors.Unwrap(err),
					Reason: fmt.Sprintf("not healthy after %s (GET %s)", p.opts.HealthTimeout, p.opts.HealthPath),
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return target.NewDeployment(workers, nil), nil
}
