package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials"
)

// Replay runs a real-time trial's own request stream on the virtual clock
// and records it as a virtual row: t's spec with clock virtual, so the same
// seed sends the same requests at the same intended times (the stream hash
// says so) through the router's decision code into simulated engines that
// are never late, unless the spec states the HTTP path and the engines'
// lateness (http_overhead_ms, engine_lag_ms, …), which it then models. The
// row is what `trial run --clock virtual` of the spec records, outside any
// sweep or replicate group; its records are streamed into its summary, not
// kept.
//
// Every real-time trial on simulated engines, or on real servers whose
// target names a profile, calls it after its run and links its row to the
// replay's (predicted_by, `ledger compare --predicted`).
func (r *Runner) Replay(ctx context.Context, t trials.Trial) (Outcome, error) {
	// A prediction is no member of the trial's sweep or replicate group:
	// those compare and count real-time runs.
	t.SweepID, t.Replicate = "", trials.Replicate{}
	ts := []trials.Trial{t}
	if err := trials.SetClock(ts, trials.ClockVirtual, "replay"); err != nil {
		return Outcome{}, err
	}
	twin := *r
	twin.opts.StreamVirtual, twin.opts.Decisions, twin.opts.Progress, twin.opts.Assertions, twin.opts.Prediction = true, nil, nil, nil, nil
	return twin.run(ctx, ts[0], Baseline{}, nil)
}

// replay runs the trial's replay once it ran in real time on simulated
// engines, and hands its figures to the classifier, which then judges the
// host by them (failure.JudgeReplay) rather than by the engines' lag,
// unless the caller set an engine-lag bound (Options.EngineLagRatioLimit).
// On real servers a profile describes the replay is a prediction only:
// the row is linked to it, but it judges nothing, since the servers do not
// share the host with the trial and a miss is the profile's, not the
// host's.
// A caller that holds the trial's prediction already (Options.Prediction)
// has it judge instead, and no replay runs. A trial that did not run to
// its end, or one the virtual clock cannot run, gets no replay: the lag
// bound judges it as before.
func (tr *trialRun) replay(ctx context.Context) {
	if tr.t.Virtual() || !replayable(tr.t) || tr.result == nil || tr.obs.Err != nil || ctx.Err() != nil {
		return
	}
	predicted := tr.opts.Prediction
	if predicted == nil {
		t, ok := tr.replayTrial()
		if !ok {
			tr.log.Warn("no virtual replay: the target's calibration gave no profile", "trial", tr.t.Name)
			return
		}
		out, err := tr.Replay(ctx, t)
		if err == nil && out.Summary.Completed == 0 {
			err = fmt.Errorf("the replay completed no request (%s: %v)", out.Status, out.Failure)
		}
		if err == nil && out.Summary.StreamHash != tr.result.Summary.StreamHash {
			err = fmt.Errorf("the replay sent stream %s, the trial %s", out.Summary.StreamHash, tr.result.Summary.StreamHash)
		}
		if err != nil {
			tr.log.Warn("no virtual replay: no prediction is recorded, and on simulated engines their lag bound judges the host", "trial", tr.t.Name, "err", err)
			return
		}
		m, err := metricsOf(out.Summary)
		if err != nil {
			tr.log.Warn("no virtual replay", "trial", tr.t.Name, "err", err)
			return
		}
		predicted = &ledger.Trial{Metrics: m}
		predicted.ID = out.RowID
		tr.log.Info("virtual replay recorded", "trial", tr.t.Name, "row", out.RowID)
	}
	figs, err := replayFigures(tr.result.Summary, predicted.Values())
	if err != nil {
		tr.log.Warn("no virtual replay", "trial", tr.t.Name, "err", err)
		return
	}
	tr.replayRow, tr.replayFigs = predicted.ID, figs
	if tr.opts.EngineLagRatioLimit == 0 && simulated(tr.t) {
		// An explicit engine-lag bound (--max-engine-lag-ratio) judges by
		// the lag as it asks; the replay is recorded all the same.
		tr.obs.Replay = figs
	}
}

// replayable says whether a real-time trial's workers have a model the
// virtual clock can run: simulated engines, whose profile is the model,
// or real servers whose target names a profile of them.
func replayable(t trials.Trial) bool {
	pw, ok := t.Target.Options.(target.ProfiledWorkers)
	return simulated(t) || ok && pw.Profiled()
}

// simulated says whether the trial's workers are simulated engines.
func simulated(t trials.Trial) bool {
	sw, ok := t.Target.Options.(target.SimulatedWorkers)
	return ok && sw.Simulated()
}

// replayFigures pairs the measured and the replayed values of every metric
// the host is judged by.
func replayFigures(measured driver.Summary, replayed map[string]float64) ([]failure.ReplayFigure, error) {
	m, err := metricsOf(measured)
	if err != nil {
		return nil, err
	}
	vals := ledger.Trial{Metrics: m}.Values()
	var out []failure.ReplayFigure
	for _, name := range failure.ReplayMetrics() {
		mv, ok1 := vals[name]
		rv, ok2 := replayed[name]
		if !ok1 || !ok2 {
			return nil, errors.New("no " + name + " to compare")
		}
		out = append(out, failure.ReplayFigure{Metric: name, Measured: mv, Replay: rv})
	}
	return out, nil
}
