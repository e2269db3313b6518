package ledger

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ReplicateConfidence is the level of the intervals across replicates.
const ReplicateConfidence = 0.95

// Estimate is a metric's mean across a group's replicates with a
// two-sided Student t confidence interval (t with N−1 degrees of freedom,
// sample standard deviation): the replicates are few, so the normal
// approximation would understate the interval. With N = 1 there is no
// interval and Lo = Hi = Mean.
type Estimate struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"ci_low"`
	Hi   float64 `json:"ci_high"`
	N    int     `json:"n"`
}

// HalfWidth is the interval's half width (the "±").
func (e Estimate) HalfWidth() float64 { return (e.Hi - e.Lo) / 2 }

// Overlaps reports whether the two intervals share a point.
func (e Estimate) Overlaps(o Estimate) bool { return e.Lo <= o.Hi && o.Lo <= e.Hi }

// MeanCI estimates the mean of xs with a confidence interval at level
// (e.g. 0.95).
func MeanCI(xs []float64, level float64) Estimate {
	switch len(xs) {
	case 0:
		return Estimate{}
	case 1:
		return Estimate{Mean: xs[0], Lo: xs[0], Hi: xs[0], N: 1}
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(1 - (1-level)/2)
	half := t * sd / math.Sqrt(float64(len(xs)))
	return Estimate{Mean: mean, Lo: mean - half, Hi: mean + half, N: len(xs)}
}

// MetricEstimate is one metric's Estimate across a group's replicates.
type MetricEstimate struct {
	Metric string `json:"metric"`
	Estimate
}

// GroupResult is a repeated trial's result: its replicates and, when every
// one of them is ok, each metric's mean and interval across them. A group
// with a failed, aborted or missing replicate is incomplete: its figures
// are withheld (a mean over the survivors would hide the failure and bias
// the result toward the runs that went well), it is left out of Pareto
// fronts and compare refuses it.
type GroupResult struct {
	Group      string  `json:"replicate_group"`
	Name       string  `json:"name"`
	Replicates int     `json:"replicates"` // N, as planned
	OK         int     `json:"ok"`         // replicates with status ok
	IDs        []int64 `json:"trial_ids"`  // in replicate order
	Stale      bool    `json:"stale"`      // a replicate is stale
	// Missing says why the group is incomplete ("" when complete).
	Missing    string           `json:"incomplete,omitempty"`
	Confidence float64          `json:"confidence"`
	Metrics    []MetricEstimate `json:"metrics,omitempty"`
	Trials     []Trial          `json:"-"`
}

// Complete reports whether all N replicates are recorded and ok.
func (g GroupResult) Complete() bool { return g.Missing == "" }

// ReplicateGroup reads a replicate group's rows and summarises them.
func (l *Ledger) ReplicateGroup(ctx context.Context, group string) (GroupResult, error) {
	var rows []trialRow
	if err := l.db.SelectContext(ctx, &rows, l.db.Rebind(selectTrials()+" WHERE replicate_group = ? ORDER BY replicate_index, id"), group); err != nil {
		return GroupResult{}, fmt.Errorf("reading replicate group %s: %w", group, err)
	}
	if group == "" || len(rows) == 0 {
		return GroupResult{}, fmt.Errorf("replicate group %q: %w", group, ErrNotFound)
	}
	ts := make([]Trial, len(rows))
	for i, r := range rows {
		t, err := r.decode()
		if err != nil {
			return GroupResult{}, err
		}
		ts[i] = t
	}
	return SummariseGroup(ts), nil
}

// SummariseGroup builds the result of one group's rows (all with the same
// ReplicateGroup).
func SummariseGroup(ts []Trial) GroupResult {
	g := GroupResult{Confidence: ReplicateConfidence, Trials: ts}
	var problems []string
	for _, t := range ts {
		g.Group, g.Name, g.Replicates = t.ReplicateGroup, t.Name, max(g.Replicates, t.Replicates)
		g.IDs = append(g.IDs, t.ID)
		g.Stale = g.Stale || t.Stale
		if t.Status == StatusOK {
			g.OK++
			continue
		}
		why := string(t.Status)
		if t.FailureKind != "" {
			why = string(t.FailureKind)
		}
		problems = append(problems, fmt.Sprintf("replicate %d (row %d) %s", t.ReplicateIndex, t.ID, why))
	}
	if n := len(ts); n < g.Replicates {
		problems = append(problems, fmt.Sprintf("%d of %d replicates recorded", n, g.Replicates))
	}
	if len(problems) > 0 {
		g.Missing = fmt.Sprintf("%d of %d replicates ok: ", g.OK, g.Replicates)
		for i, p := range problems {
			if i > 0 {
				g.Missing += "; "
			}
			g.Missing += p
		}
		return g
	}
	for _, m := range MetricList() {
		xs := make([]float64, 0, len(ts))
		for _, t := range ts {
			if v, ok := t.Value(m.Name); ok {
				xs = append(xs, v)
			}
		}
		if len(xs) < len(ts) {
			// Not measured on every replicate (a NULL column): no estimate
			// rather than one over some of them.
			continue
		}
		g.Metrics = append(g.Metrics, MetricEstimate{Metric: m.Name, Estimate: MeanCI(xs, g.Confidence)})
	}
	return g
}

// Metric returns the estimate of one metric (false when withheld or
// unknown).
func (g GroupResult) Metric(name string) (Estimate, bool) {
	i := slices.IndexFunc(g.Metrics, func(m MetricEstimate) bool { return m.Metric == name })
	if i < 0 {
		return Estimate{}, false
	}
	return g.Metrics[i].Estimate, true
}
