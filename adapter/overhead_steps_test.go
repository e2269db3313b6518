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
// and the drain after it are left out) that waited for their planned end
// (a catch-up step, planned after its end had passed, is left out), an
// early step counts as 0, and
// engine_lag_ms is the rounded median; the kept steps planned on waking
// give their planning delay and lateness (planning delay + own lag), and
// engine_wake_ms is the lateness's median.
func TestStepLagsMeasuredPhaseOnly(t *testing.T) {
	start := time.Unix(100, 0)
	p := newSplitProbe()
	step := func(doneAfterStart, lag, wake time.Duration) {
		done := start.Add(doneAfterStart)
		st := sim.StepTiming{Planned: done.Add(-lag - 500*time.Microsecond), End: done.Add(-lag), Done: done}
		if wake != 0 {
			st.Woken = st.Planned.Add(-wake)
		}
		p.step(st)
	}
	step(-time.Millisecond, 9*time.Millisecond, 5*time.Millisecond) // warm-up
	step(time.Millisecond, 100*time.Microsecond, 70*time.Microsecond)
	step(2*time.Millisecond, 300*time.Microsecond, 0)
	step(3*time.Millisecond, -50*time.Microsecond, 0) // early: on time
	// A catch-up step: planned 2 ms after its end had passed, it did not
	// wait and completed at once; its 2 ms are the step before's lateness.
	p.step(sim.StepTiming{Planned: start.Add(4 * time.Millisecond), End: start.Add(2 * time.Millisecond), Done: start.Add(4*time.Millisecond + 10*time.Microsecond)})
	step(40*time.Millisecond, 200*time.Microsecond, 30*time.Microsecond)
	step(41*time.Millisecond, 9*time.Millisecond, 6*time.Millisecond) // after the last answer
	// The last answer: sent at 10 ms, 30 ms end to end.
	p.done(&driver.Result{Start: start, Requests: []metrics.RequestRecord{{SendMs: 0, E2ELMs: 5}, {SendMs: 10, E2ELMs: 30}}})
	lags, plans, wakes := p.stepDelays()
	want := []time.Duration{100 * time.Microsecond, 300 * time.Microsecond, 0, 200 * time.Microsecond}
	if len(lags) != len(want) {
		t.Fatalf("lags %v, want %v", lags, want)
	}
	for i := range want {
		if lags[i] != want[i] {
			t.Fatalf("lags %v, want %v", lags, want)
		}
	}
	if len(plans) != 2 || plans[0] != 70*time.Microsecond || plans[1] != 30*time.Microsecond {
		t.Fatalf("planning delays %v, want [70µs 30µs]", plans)
	}
	if len(wakes) != 2 || wakes[0] != 170*time.Microsecond || wakes[1] != 230*time.Microsecond {
		t.Fatalf("woken steps' lateness %v, want [170µs 230µs] (planning delay + lag)", wakes)
	}
	// The percentiles are the driver's (numpy's linear method): of the
	// lags 0, 0.1, 0.2, 0.3 ms the p10 is 0.03, the median 0.15 (between
	// the middle two) and the p90 0.27.
	var o Overhead
	o.stepDelays(lags, plans, wakes)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if o.Steps != 4 || !near(o.StepLagP50Ms, 0.15) || o.EngineLagMs != 0.15 || !near(o.StepLagP10Ms, 0.03) || !near(o.StepLagP90Ms, 0.27) ||
		!near(o.StepLagMean, 0.15) {
		t.Errorf("figures %+v: want 4 steps, p10/p50/p90 0.03/0.15/0.27, mean 0.15, engine_lag_ms 0.15", o)
	}
	if o.Wakes != 2 || !near(o.WakeP50Ms, 0.2) || o.EngineWakeMs != 0.2 || !near(o.WakeP10Ms, 0.176) || !near(o.WakeMeanMs, 0.2) ||
		!near(o.WakePlanP50Ms, 0.05) {
		t.Errorf("wake figures %+v: want 2 wakes, median 0.2, p10 0.176, mean 0.2, planning median 0.05, engine_wake_ms 0.2", o)
	}
}
