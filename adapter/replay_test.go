package adapter

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// A real-time trial on simulated engines records its own virtual replay:
// a virtual row of the same spec and request stream, which the real row's
// predicted_by names (`ledger compare --predicted` lists the pair), and
// the outcome pairs every judged metric with the replay's.
func TestRealTrialRecordsItsReplay(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out := runOK(t, r, parseSpec(t, spec)[0])
	if out.ReplayRow == 0 || len(out.Replay) != len(failure.ReplayMetrics()) {
		t.Fatalf("replay row %d, figures %+v; want a row and one figure per judged metric", out.ReplayRow, out.Replay)
	}
	for i, f := range out.Replay {
		if f.Metric != failure.ReplayMetrics()[i] || f.Measured <= 0 || f.Replay <= 0 {
			t.Errorf("figure %+v", f)
		}
	}
	pairs, err := led.Predictions(context.Background(), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 1 {
		t.Fatalf("%d prediction pairs, want the trial and its replay", len(pairs))
	}
	m, v := pairs[0].Measured, pairs[0].Predicted
	if m.ID != out.RowID || v.ID != out.ReplayRow || !v.Virtual() || m.Virtual() || v.WorkloadHash != m.WorkloadHash ||
		v.Completed != m.Completed || v.Name != m.Name || v.Seed != m.Seed {
		t.Fatalf("pair: measured %d (%s, %s, %d done), replay %d (%s, %s, %d done)", m.ID, m.Clock, m.WorkloadHash, m.Completed,
			v.ID, v.Clock, v.WorkloadHash, v.Completed)
	}
	vals := v.Values()
	for _, f := range out.Replay {
		if vals[f.Metric] != f.Replay {
			t.Errorf("%s: replay row %v, outcome %v", f.Metric, vals[f.Metric], f.Replay)
		}
	}
}

// The replay judges the host by its effect: a driver whose clock reads
// 150 ms later at every look (its schedule-delay bound lifted by the spec,
// the engines' lag bound at its default) measures every TTFT at least that
// long (and every inter-token gap), where its replay gives a millisecond or
// two: HostOverloaded names a latency metric and both values. The engines' lag, whatever it is, is not
// what judged it.
func TestReplayJudgesTheHost(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	r.opts.EngineLagRatioLimit = 0 // the replay judges
	start := time.Now()
	var looks atomic.Int64
	r.hooks.clock = func() time.Time { return start.Add(time.Duration(looks.Add(1)) * 150 * time.Millisecond) }
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "replicas: 2", "replicas: 1", 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}\nchecks: {max_schedule_delay_p99_ms: 1e9}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.HostOverloaded)
	tol, judged := failure.ReplayToleranceOf(f.Figure)
	if !ok || f.Replay == nil || !judged || tol.Higher || f.Value < 150 || *f.Replay > 50 {
		t.Fatalf("failure %T %+v, want HostOverloaded naming a latency ≥ 150 ms against its replay", out.Failure, out.Failure)
	}
	if msg := f.Error(); !strings.Contains(msg, f.Figure) || !strings.Contains(msg, "virtual replay") {
		t.Errorf("message %q does not name the metric and the replay", msg)
	}
	if out.ReplayRow == 0 {
		t.Error("no replay row recorded")
	}
}

// A caller holding the trial's prediction (search --confirm's candidate
// row) has it judge and link the trial: no replay of its own runs.
func TestGivenPredictionJudgesWithoutAReplay(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	virtual := runOK(t, r, parseSpec(t, spec+"clock: virtual\n")[0])
	predicted, err := led.Get(context.Background(), virtual.RowID)
	if err != nil {
		t.Fatal(err)
	}
	r.opts.Prediction = &predicted
	out := runOK(t, r, parseSpec(t, spec)[0])
	rows, err := led.List(context.Background(), ledger.Filter{IncludeStale: true, IncludeVirtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.ReplayRow != predicted.ID || len(rows) != 2 || len(out.Replay) == 0 {
		t.Fatalf("replay row %d (want the prediction, %d), %d rows (want 2: no replay of its own), figures %+v",
			out.ReplayRow, predicted.ID, len(rows), out.Replay)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil || row.PredictedBy == nil || *row.PredictedBy != predicted.ID {
		t.Fatalf("row %d: predicted_by %v (%v), want %d", out.RowID, row.PredictedBy, err, predicted.ID)
	}
	for _, f := range out.Replay {
		if f.Replay != predicted.Values()[f.Metric] {
			t.Errorf("%s: judged against %v, the prediction has %v", f.Metric, f.Replay, predicted.Values()[f.Metric])
		}
	}
}

// The replay of a trial on real servers a profile describes is a
// prediction, not a judge: under the same late clock as
// TestReplayJudgesTheHost, a static target naming the engines' profile
// records the replay and links the row to it, but the trial is ok, since
// its servers do not share the host and a miss is the profile's.
func TestProfiledStaticReplayPredictsOnly(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	r.opts.EngineLagRatioLimit = 0 // a simulated target's replay would judge
	start := time.Now()
	var looks atomic.Int64
	r.hooks.clock = func() time.Time { return start.Add(time.Duration(looks.Add(1)) * 150 * time.Millisecond) }
	url := simtest.Start(t, sim.Options{Engine: engine.Config{Model: "sim-m", MaxNumSeqs: 32}})
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "replicas: 2", "replicas: 1", 1)
	spec = strings.Replace(spec, "target: {kind: sim, profile: fast}", "target: {kind: static, hardware: test-sim, workers: ["+url+"], profile: fast}", 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}",
		"gate: {reference: none}\nchecks: {max_schedule_delay_p99_ms: 1e9, max_engine_lag_ratio: 1e9}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure != nil || out.ReplayRow == 0 || len(out.Replay) == 0 {
		t.Fatalf("failure %v, replay row %d, figures %+v; want ok with a replay", out.Failure, out.ReplayRow, out.Replay)
	}
	late := false
	for _, f := range out.Replay {
		if tol, judged := failure.ReplayToleranceOf(f.Metric); judged && !tol.Higher && f.Measured >= 150 && f.Replay < 50 {
			late = true
		}
	}
	if !late {
		t.Fatalf("figures %+v: no latency 150 ms past its replay, the test judges nothing", out.Replay)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil || row.PredictedBy == nil || *row.PredictedBy != out.ReplayRow {
		t.Fatalf("row %d: predicted_by %v (%v), want %d", out.RowID, row.PredictedBy, err, out.ReplayRow)
	}
}
