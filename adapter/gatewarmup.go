package adapter

import (
	"context"

	"github.com/autoinfer/autoinfer/adapter/gate"
	"github.com/autoinfer/autoinfer/driver"
)

// warmupGate runs a trial's quality gate alongside its warm-up: the gate
// then adds nothing to the trial's wall time when it is no longer than the
// warm-up (the CI smoke trial's gate and warm-up take about 0.15 s each),
// and the driver starts the measured run only after it, so no gate prompt
// overlaps the measured window. The gate's prompts share no text with the
// measured stream and carry no run id, so the router's per-run counts
// and the measured requests' prefix-cache state are as when the gate ran
// after the run. A trial without warm-up requests gates after its
// measured run, as does one whose ready check failed (the gate never
// started).
type warmupGate struct {
	tr      *trialRun
	baseURL string

	ran bool // set on the driver's goroutine; read after driver.Run
	res *gate.Result
	err error
}

// option is the driver option that runs the gate during the warm-up, or
// none when the trial gates after its run.
func (g *warmupGate) option() []driver.Option {
	if g.tr.t.Warmup.Requests <= 0 {
		return nil
	}
	return []driver.Option{driver.WithDuringWarmup(func(ctx context.Context) {
		g.res, g.err = g.tr.gateVerdict(ctx, g.baseURL)
		g.ran = true
	})}
}

// keep puts the gate's verdict in the trial's observation, running the
// gate now if it did not run during the warm-up. Call it after driver.Run
// has returned (which waits for the gate).
func (g *warmupGate) keep(ctx context.Context) {
	if !g.ran {
		g.res, g.err = g.tr.gateVerdict(ctx, g.baseURL)
	}
	g.tr.keepGate(g.res, g.err)
}
