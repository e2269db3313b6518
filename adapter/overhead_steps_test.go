package adapter

import (
	"math"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/target/sim"
)

// TestStepLagsMeasuredPhaseOnly: the probe keeps the lags of the steps
// completed from the measured phase's start to its last answer (warm-up
// and the drain after it are left out), an early step counts as 0, and
// engine_lag_ms is the rounded median.
func TestStepLagsMeasuredPhaseOnly(t *testing.T) {
	start := time.Unix(100, 0)
	p := newSplitProbe()
	step := func(doneAfterStart, lag time.Duration) {
		done := start.Add(doneAfterStart)
		p.step(sim.StepTiming{End: done.Add(-lag), Done: done})
	}
	step(-time.Millisecond, 9*time.Millisecond) // warm-up
	step(time.Millisecond, 100*time.Microsecond)
	step(2*time.Millisecond, 300*time.Microsecond)
	step(3*time.Millisecond, -50*time.Microsecond) // early: on time
	step(40*time.Millisecond, 200*time.Microsecond)
	step(41*time.Millisecond, 9*time.Millisecond) // after the last answer
	// The last answer: sent at 10 ms, 30 ms end to end.
	p.done(&driver.Result{Start: start, Requests: []metrics.RequestRecord{{SendMs: 0, E2ELMs: 5}, {SendMs: 10, E2ELMs: 30}}})
	lags := p.stepLags()
	want := []time.Duration{100 * time.Microsecond, 300 * time.Microsecond, 0, 200 * time.Microsecond}
	if len(lags) != len(want) {
		t.Fatalf("lags %v, want %v", lags, want)
	}
	for i := range want {
		if lags[i] != want[i] {
			t.Fatalf("lags %v, want %v", lags, want)
		}
	}
	var o Overhead
	o.stepLag(lags)
	if o.Steps != 4 || o.StepLagP50Ms != 0.2 || o.EngineLagMs != 0.2 || o.StepLagP10Ms != 0 || o.StepLagP90Ms != 0.3 || math.Abs(o.StepLagMean-0.15) > 1e-9 {
		t.Errorf("figures %+v: want 4 steps, p10/p50/p90 0/0.2/0.3, mean 0.15, engine_lag_ms 0.2", o)
	}
}
