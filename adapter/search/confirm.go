package search

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// ConfirmOptions configure Confirm. The limits are the real-time trial's
// host-overload checks (trial run's --max-schedule-delay and
// --max-engine-lag-ratio); zero keeps the spec's.
type ConfirmOptions struct {
	Ledger              *ledger.Ledger
	ScheduleDelayLimit  time.Duration
	EngineLagRatioLimit float64
	WorkDir             string
	// Check, when set, vets the real-time trials before any runs (trial
	// run's host-memory check); an error runs none.
	Check func([]trials.Trial) error
	// Started is told of each real-time trial as it starts (i of k).
	Started func(i, k int, name string)
	Logger  *slog.Logger
}

// Confirmed is a candidate run again in real time: its virtual prediction
// and the real-time row that measured it.
type Confirmed struct {
	Candidate Candidate
	Pair      ledger.Prediction
	// Errors are the prediction's metrics (ledger.PredictionMetrics, then
	// the objective's) compared.
	Errors []ledger.MetricError
}

// Agrees reports whether the real-time trial counts and every metric is
// within ledger.PredictionTolerance of its prediction.
func (c Confirmed) Agrees() bool { return c.Pair.Agrees(c.Errors) }

// Pick is what --confirm k runs: the top k feasible candidates by the
// objective, or k points of the Pareto front spread along it (both ends
// first), in rank order.
func Pick(r Ranked, k int) []Candidate {
	if len(r.Front) == 0 {
		return r.Top[:min(k, len(r.Top))]
	}
	n := len(r.Front)
	if k >= n {
		return r.Front
	}
	if k == 1 {
		return r.Front[:1]
	}
	var out []Candidate
	for i := range k {
		out = append(out, r.Front[i*(n-1)/(k-1)])
	}
	return out
}

// Confirm runs each picked candidate again as a real-time trial: the same
// spec (the same request stream, all of it: the prediction is for the
// spec's traffic) on the real clock, over HTTP, recorded as an ordinary
// real-time row whose predicted_by is the candidate's virtual row. A trial
// the checks refuse (HostOverloaded, a failed assertion) is recorded and
// returned as such; it never counts as agreement.
func Confirm(ctx context.Context, s Spec, picks []Candidate, o ConfirmOptions) ([]Confirmed, error) {
	if o.Ledger == nil {
		return nil, errors.New("confirm: a ledger is required")
	}
	ts := make([]trials.Trial, len(picks))
	for i, c := range picks {
		if c.RowID == 0 || !c.Feasible() {
			return nil, fmt.Errorf("confirm: candidate %s has no feasible virtual row", c.Trial.Name)
		}
		ts[i] = c.Trial
	}
	// One sweep id for the confirmation runs, derived from their real-time
	// specs (SetClock recomputes it and every spec hash).
	if err := trials.SetClock(ts, trials.ClockReal, "--confirm"); err != nil {
		return nil, err
	}
	if o.Check != nil {
		if err := o.Check(ts); err != nil {
			return nil, err
		}
	}
	var out []Confirmed
	for i, c := range picks {
		if o.Started != nil {
			o.Started(i+1, len(picks), c.Trial.Name)
		}
		predicted, err := o.Ledger.Get(ctx, c.RowID)
		if err != nil {
			return out, err
		}
		// The candidate's row is the confirmation's replay: it judges the
		// host (adapter.Options.Prediction), and no other runs.
		r, err := adapter.New(adapter.Options{Ledger: linked{l: o.Ledger, by: c.RowID}, WorkDir: o.WorkDir, Logger: o.Logger,
			ScheduleDelayLimit: o.ScheduleDelayLimit, EngineLagRatioLimit: o.EngineLagRatioLimit, Prediction: &predicted})
		if err != nil {
			return out, err
		}
		res, err := r.Run(ctx, ts[i])
		if err != nil {
			return out, fmt.Errorf("confirming %s: %w", c.Trial.Name, err)
		}
		measured, err := o.Ledger.Get(ctx, res.RowID)
		if err != nil {
			return out, err
		}
		p := ledger.Prediction{Predicted: predicted, Measured: measured}
		out = append(out, Confirmed{Candidate: c, Pair: p, Errors: append(p.Errors(), objectiveErrors(s, c, p)...)})
	}
	return out, nil
}

// objectiveErrors compares the objective's metrics that PredictionMetrics
// leaves out (a per-GPU metric is its base divided by the candidate's
// GPUs, equal under both clocks).
func objectiveErrors(s Spec, c Candidate, p ledger.Prediction) []ledger.MetricError {
	var out []ledger.MetricError
	for _, name := range s.Objective.metrics() {
		if slices.Contains(ledger.PredictionMetrics(), name) {
			continue
		}
		base, div := name, 1.0
		if b, ok := strings.CutSuffix(name, "_per_gpu"); ok {
			base, div = b, float64(max(c.GPUs, 1))
		}
		pv, ok1 := p.Predicted.Values()[base]
		mv, ok2 := p.Measured.Values()[base]
		if ok1 && ok2 {
			out = append(out, ledger.NewMetricError(name, pv/div, mv/div))
		}
	}
	return out
}

// Winner says whether the measurements keep the prediction's order: under
// one objective, the best measured of the counted confirmations must be
// the predicted best (cs[0]); on a front, no counted confirmation may
// dominate another in measurement. Candidates predicted equal have no
// order to break. It returns "" when they agree, else what differs.
func Winner(s Spec, r Ranked, cs []Confirmed) string {
	var ok []Confirmed
	for _, c := range cs {
		if c.Pair.Refused() == "" {
			ok = append(ok, c)
		}
	}
	if len(ok) < 2 {
		return ""
	}
	value := func(c Confirmed, m ledger.Metric, predicted bool) float64 {
		for _, e := range c.Errors {
			if e.Metric == m.Name {
				if predicted {
					return e.Predicted
				}
				return e.Measured
			}
		}
		return math.NaN()
	}
	measured := func(c Confirmed, m ledger.Metric) float64 { return value(c, m, false) }
	predicted := func(c Confirmed, m ledger.Metric) float64 { return value(c, m, true) }
	if len(r.Metrics) == 1 {
		m := r.Metrics[0]
		best := ok[0]
		for _, c := range ok[1:] {
			if m.Direction.Better(measured(c, m), measured(best, m)) {
				best = c
			}
		}
		// Candidates predicted equal have no predicted order to break.
		if best.Candidate.RowID != cs[0].Candidate.RowID && predicted(best, m) != predicted(cs[0], m) {
			return fmt.Sprintf("the confirmed winner differs from the predicted one: %s measured best on %s (%.4g), predicted best %s measured %.4g",
				best.Candidate.Trial.Name, m.Name, measured(best, m), cs[0].Candidate.Trial.Name, measured(cs[0], m))
		}
		return ""
	}
	x, y := r.Metrics[0], r.Metrics[1]
	for _, a := range ok {
		for _, b := range ok {
			if predicted(a, x) == predicted(b, x) && predicted(a, y) == predicted(b, y) {
				continue // one predicted point: no predicted order to break
			}
			ax, ay, bx, by := measured(a, x), measured(a, y), measured(b, x), measured(b, y)
			if !x.Direction.Better(ax, bx) && !y.Direction.Better(ay, by) && (x.Direction.Better(bx, ax) || y.Direction.Better(by, ay)) {
				return fmt.Sprintf("the measured front differs from the predicted one: %s dominates %s in real time", b.Candidate.Trial.Name, a.Candidate.Trial.Name)
			}
		}
	}
	return ""
}

// linked records each row as confirming the virtual row by.
type linked struct {
	l  adapter.Recorder
	by int64
}

func (r linked) RecordSeq(ctx context.Context, t ledger.Trial, reqs iter.Seq2[ledger.Request, error]) (ledger.Recorded, error) {
	t.PredictedBy = &r.by
	return r.l.RecordSeq(ctx, t, reqs)
}
