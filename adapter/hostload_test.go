package adapter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// lateClock is the time package with every engine timer firing late by
// lag: a host too loaded to wake the engine on time, with the lag under the
// test's control rather than the machine's.
type lateClock struct {
	sim.RealClock
	lag time.Duration
}

func (c lateClock) NewTimer(d time.Duration) sim.Timer {
	return lateTimer{c.RealClock.NewTimer(d + c.lag), c.lag}
}

type lateTimer struct {
	sim.Timer
	lag time.Duration
}

func (t lateTimer) Reset(d time.Duration) bool { return t.Timer.Reset(d + t.lag) }

// slowSteps is a linear profile whose every step takes 20 ms of modelled
// time: long enough that a loaded machine's own wake-up lag stays a small
// fraction of it, so the injected lag alone decides the verdict.
func slowSteps(t *testing.T) sim.Profile {
	t.Helper()
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	p.Name, p.StepBaseMs = "slow-steps", 20
	return p
}

const hostSpec = `
name: host-load
seed: 5
target: {kind: static, hardware: test-sim, workers: [%s]}
topology:
  replicas: 1
  engine: {model: sim-llama-3-8b}
workload:
  kind: random
  input_len: 32
  output_len: 3
  num_prompts: 6
  arrival: {kind: closed_loop, max_concurrency: 2}
warmup: {requests: 2}
gate: {reference: none}
checks: {max_engine_lag_ratio: 1}
`

// Acceptance 11.5: an engine whose steps end late (each timer fires 60 ms
// after its modelled 20 ms: an injected lag ratio of about 3) makes the
// trial HostOverloaded{engine_lag_ratio} against the spec's bound 1, not
// ok; the same trial against an engine on its clock is ok. The bound is a
// ratio of the lag the test injects, not a timing threshold.
func TestEngineLagIsHostOverloaded(t *testing.T) {
	t.Parallel()
	prof := slowSteps(t)
	lagging := simtest.Start(t, sim.Options{Profile: prof, Clock: lateClock{lag: 60 * time.Millisecond}})
	quiet := simtest.Start(t, sim.Options{Profile: prof})
	r, led := newTestRunner(t)
	r.opts.EngineLagRatioLimit = 0 // the spec's checks decide

	out, err := r.Run(context.Background(), parseSpec(t, fmt.Sprintf(hostSpec, lagging))[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.HostOverloaded)
	if !ok || out.Status != ledger.StatusFailed {
		t.Fatalf("lagging engine: status %s, failure %T %v; want HostOverloaded", out.Status, out.Failure, out.Failure)
	}
	if f.Figure != failure.FigureEngineLagRatio || f.Bound != 1 || f.Value < 2 {
		t.Errorf("failure %+v: want engine_lag_ratio ≥ 2 (3 injected) against bound 1", f)
	}
	if msg := f.Error(); !strings.Contains(msg, "engine_lag_ratio") || !strings.Contains(msg, "bound 1") {
		t.Errorf("message %q does not name the figure and its bound", msg)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if row.EngineLagRatio == nil || *row.EngineLagRatio != f.Value || row.FailureKind != failure.KindHostOverloaded {
		t.Errorf("row: lag ratio %v, failure %s; want %v, HostOverloaded", deref(row.EngineLagRatio), row.FailureKind, f.Value)
	}

	out = runOK(t, r, parseSpec(t, fmt.Sprintf(hostSpec, quiet))[0])
	t.Logf("lag ratio: injected run %.3f, quiet run %.3f", f.Value, lagRatio(out))
}
