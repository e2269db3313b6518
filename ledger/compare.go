package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// CompareOptions tune the bootstrap. Zero values take the defaults.
type CompareOptions struct {
	Resamples  int     // default 2000
	Confidence float64 // default 0.95
	Seed       uint64  // default 1; equal seeds give equal intervals
}

// Side is one side of a comparison: one trial, every replicate of a
// repeated trial, or every ok trial of a sweep.
type Side struct {
	Ref      string  `json:"ref"`
	Resolved string  `json:"resolved"` // "trial", "group", "sweep" or "name"
	Trials   []Trial `json:"-"`
	IDs      []int64 `json:"trial_ids"`
	// Names are the trials' names, in IDs order: how a side is labelled.
	Names    []string `json:"names"`
	Requests int      `json:"requests"`
	// Group is the replicate group's result when the side is one.
	Group *GroupResult `json:"replicate_group,omitempty"`
}

// MetricDelta is one metric side by side. With several trials on a side
// its value is their mean. A, B and Diff are nil (JSON null, shown as "–")
// when a trial of that side has no value for the metric (a NULL figure). A
// side that is a replicate group carries its interval across replicates
// (ACI, BCI); when an interval reaches the other side's value or interval,
// the sides are not separable on this metric and Better stays empty.
type MetricDelta struct {
	Metric       string    `json:"metric"`
	Direction    string    `json:"direction"`
	A            *float64  `json:"a"`
	B            *float64  `json:"b"`
	ACI          *Estimate `json:"a_ci,omitempty"`
	BCI          *Estimate `json:"b_ci,omitempty"`
	Diff         *float64  `json:"diff"`   // B − A
	Better       string    `json:"better"` // "A", "B" or "" when equal, unknown or not separable
	NotSeparable bool      `json:"not_separable,omitempty"`
}

// Interval is a bootstrap confidence interval on B − A of one latency
// percentile, or of the misroute rate (receipts.go), computed from the
// per-request records.
type Interval struct {
	Metric      string  `json:"metric"` // p50_ttft_ms, p99_ttft_ms, p50_tpot_ms, p99_tpot_ms, misroute_rate
	A           float64 `json:"a"`
	B           float64 `json:"b"`
	Diff        float64 `json:"diff"`
	Lo          float64 `json:"ci_low"`
	Hi          float64 `json:"ci_high"`
	Significant bool    `json:"significant"` // the interval excludes 0
	Better      string  `json:"better"`      // "A" or "B" when significant (lower latency wins)
	NA          int     `json:"n_a"`
	NB          int     `json:"n_b"`
}

// Comparison is Compare's answer.
type Comparison struct {
	A, B      Side
	Metrics   []MetricDelta
	Intervals []Interval
	// AShed and BShed are each side's requests refused with 503/429;
	// ShedFlag is set when the better side shed more (shed.go).
	AShed, BShed Shedding
	ShedFlag     string
	// Controls are each side's gain over its zero-reuse control arms
	// (control.go), for the sides that have them.
	Controls []ControlGain
	// Routes are the sides' route-receipt figures (receipts.go), nil when
	// neither side has receipts.
	Routes     *RouteComparison
	Resamples  int
	Confidence float64
	Seed       uint64
}

// Compare resolves two references (see Resolve), puts every metric side by
// side and bootstraps the differences of TTFT and TPOT p50 and p99.
func (l *Ledger) Compare(ctx context.Context, refA, refB string, opt CompareOptions) (Comparison, error) {
	if opt.Resamples == 0 {
		opt.Resamples = 2000
	}
	if opt.Confidence == 0 {
		opt.Confidence = 0.95
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	if opt.Resamples < 0 || opt.Confidence <= 0 || opt.Confidence >= 1 {
		return Comparison{}, fmt.Errorf("compare: resamples %d and confidence %g must be > 0 and in (0, 1)", opt.Resamples, opt.Confidence)
	}
	a, err := l.Resolve(ctx, refA)
	if err != nil {
		return Comparison{}, err
	}
	b, err := l.Resolve(ctx, refB)
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{A: a, B: b, Resamples: opt.Resamples, Confidence: opt.Confidence, Seed: opt.Seed}
	c.Metrics = deltas(a, b, MetricList())
	sa, err := l.samples(ctx, &c.A)
	if err != nil {
		return Comparison{}, err
	}
	sb, err := l.samples(ctx, &c.B)
	if err != nil {
		return Comparison{}, err
	}
	qs := []float64{0.5, 0.99}
	for i, metric := range []string{"ttft", "tpot"} {
		xa, xb := sa[metric], sb[metric]
		if len(xa) == 0 || len(xb) == 0 {
			continue // no per-request records: no interval
		}
		// One stream per metric, so adding a metric never shifts another's interval.
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(i)))
		diff, lo, hi := bootstrapDiff(xa, xb, qs, opt.Resamples, opt.Confidence, rng)
		for j, q := range qs {
			iv := Interval{Metric: fmt.Sprintf("p%d_%s_ms", int(q*100), metric), Diff: diff[j], Lo: lo[j], Hi: hi[j],
				NA: len(xa), NB: len(xb)}
			iv.A, iv.B = percentileOf(xa, q), percentileOf(xb, q)
			iv.Significant = lo[j] > 0 || hi[j] < 0
			if iv.Significant {
				iv.Better = "A"
				if hi[j] < 0 {
					iv.Better = "B"
				}
			}
			c.Intervals = append(c.Intervals, iv)
		}
	}
	if c.AShed, err = l.shedding(ctx, c.A); err != nil {
		return Comparison{}, err
	}
	if c.BShed, err = l.shedding(ctx, c.B); err != nil {
		return Comparison{}, err
	}
	if err := l.compareRoutes(ctx, &c); err != nil {
		return Comparison{}, err
	}
	c.ShedFlag = shedFlag(c, c.AShed, c.BShed)
	for i, s := range []Side{c.A, c.B} {
		g, err := l.controlGain(ctx, []string{"A", "B"}[i], s)
		if err != nil {
			return Comparison{}, err
		}
		if g != nil {
			c.Controls = append(c.Controls, *g)
		}
	}
	return c, nil
}

// deltas puts metrics of a and b side by side.
func deltas(a, b Side, metrics []Metric) []MetricDelta {
	var out []MetricDelta
	for _, m := range metrics {
		d := MetricDelta{Metric: m.Name, Direction: m.Direction.String(), A: mean(m, a.Trials), B: mean(m, b.Trials)}
		d.ACI, d.BCI = a.estimate(m.Name), b.estimate(m.Name)
		if d.A != nil && d.B != nil {
			va, vb := *d.A, *d.B
			diff := vb - va
			d.Diff = &diff
			switch {
			case (d.ACI != nil || d.BCI != nil) && va != vb && interval(d.ACI, va).Overlaps(interval(d.BCI, vb)):
				d.NotSeparable = true
			case m.Direction.Better(va, vb):
				d.Better = "A"
			case m.Direction.Better(vb, va):
				d.Better = "B"
			}
		}
		out = append(out, d)
	}
	return out
}

// Resolve turns a reference into trials. Rules, first match wins:
//  1. a decimal integer is a trial id (any status);
//  2. a replicate group id is every replicate of that repeated trial;
//  3. a sweep id is every ok trial of that sweep, stale or not;
//  4. a name is the latest ok trial with that name, or all of its
//     replicate group when it is a replicate; real rows only, when the
//     name has any (a virtual row of the same name is their replay).
//
// A replicate group resolves only when complete (every replicate
// recorded and ok): a mean over the survivors would not be the trial's.
func (l *Ledger) Resolve(ctx context.Context, ref string) (Side, error) {
	side := Side{Ref: ref}
	if g, ok, err := l.resolveGroup(ctx, ref); err != nil {
		return Side{}, err
	} else if ok {
		side.Resolved, side.Trials, side.Group = "group", g.Trials, &g
	} else if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		t, err := l.Get(ctx, id)
		if err != nil {
			return Side{}, err
		}
		side.Resolved, side.Trials = "trial", []Trial{t}
	} else if ts, err := l.List(ctx, Filter{SweepID: ref, Status: StatusOK, IncludeStale: true}); err != nil {
		return Side{}, err
	} else if len(ts) > 0 {
		side.Resolved, side.Trials = "sweep", ts
	} else {
		var id int64
		// A real-time trial's virtual replay carries its name: the name
		// means the measurement whenever one was made, so a failed real
		// trial never resolves to the prediction of it.
		err := l.db.GetContext(ctx, &id, l.db.Rebind(`SELECT id FROM trials WHERE name = ? AND status = 'ok'
			AND (clock = 'real' OR NOT EXISTS (SELECT 1 FROM trials r WHERE r.name = ? AND r.clock = 'real'))
			ORDER BY started_at DESC, id DESC LIMIT 1`), ref, ref)
		if errors.Is(err, sql.ErrNoRows) {
			return Side{}, fmt.Errorf("%q is no trial id, sweep id or name of an ok trial: %w", ref, ErrNotFound)
		}
		if err != nil {
			return Side{}, fmt.Errorf("resolving %q: %w", ref, err)
		}
		t, err := l.Get(ctx, id)
		if err != nil {
			return Side{}, err
		}
		side.Resolved, side.Trials = "name", []Trial{t}
		if t.ReplicateGroup != "" {
			g, err := l.completeGroup(ctx, t.ReplicateGroup)
			if err != nil {
				return Side{}, fmt.Errorf("%q: the latest ok trial of that name is a replicate: %w", ref, err)
			}
			side.Trials, side.Group = g.Trials, &g
		}
	}
	for _, t := range side.Trials {
		side.IDs = append(side.IDs, t.ID)
		side.Names = append(side.Names, t.Name)
	}
	return side, nil
}

// resolveGroup resolves ref as a replicate group id (not a trial id: those
// are decimal); ok is false when no group has that id.
func (l *Ledger) resolveGroup(ctx context.Context, ref string) (GroupResult, bool, error) {
	if _, err := strconv.ParseInt(ref, 10, 64); err == nil || ref == "" {
		return GroupResult{}, false, nil
	}
	var n int
	if err := l.db.GetContext(ctx, &n, l.db.Rebind(`SELECT count(*) FROM trials WHERE replicate_group = ?`), ref); err != nil {
		return GroupResult{}, false, fmt.Errorf("resolving %q: %w", ref, err)
	}
	if n == 0 {
		return GroupResult{}, false, nil
	}
	g, err := l.completeGroup(ctx, ref)
	return g, true, err
}

// ErrIncompleteGroup is returned for a replicate group with a failed,
// aborted or missing replicate where a complete one is needed.
var ErrIncompleteGroup = errors.New("incomplete replicate group")

// completeGroup reads a replicate group and refuses it unless complete.
func (l *Ledger) completeGroup(ctx context.Context, group string) (GroupResult, error) {
	g, err := l.ReplicateGroup(ctx, group)
	if err != nil {
		return GroupResult{}, err
	}
	if !g.Complete() {
		return GroupResult{}, fmt.Errorf("replicate group %s: %s: %w", group, g.Missing, ErrIncompleteGroup)
	}
	return g, nil
}

// estimate is the side's interval on a metric when it is a replicate group.
func (s Side) estimate(metric string) *Estimate {
	if s.Group == nil {
		return nil
	}
	e, ok := s.Group.Metric(metric)
	if !ok {
		return nil
	}
	return &e
}

// interval is e, or a zero-width interval at v for a side without one.
func interval(e *Estimate, v float64) Estimate {
	if e == nil {
		return Estimate{Mean: v, Lo: v, Hi: v, N: 1}
	}
	return *e
}

// samples loads the latency samples of a side's completed requests: every
// TTFT, and the TPOT of requests with more than one output token (TPOT is
// undefined otherwise, as in vllm bench serve), in request order whatever
// order they were written in (a streamed trial writes them as they
// completed), so the bootstrap resamples the same sequence.
func (l *Ledger) samples(ctx context.Context, s *Side) (map[string][]float64, error) {
	out := map[string][]float64{}
	for _, id := range s.IDs {
		var rows []struct {
			TTFT float64 `db:"ttft_ms"`
			TPOT float64 `db:"tpot_ms"`
			Out  int     `db:"output_tokens"`
		}
		if err := l.db.SelectContext(ctx, &rows, l.db.Rebind(`SELECT ttft_ms, tpot_ms, output_tokens FROM requests
			WHERE trial_id = ? AND status = 'ok' ORDER BY request_index`), id); err != nil {
			return nil, fmt.Errorf("reading requests of trial %d: %w", id, err)
		}
		s.Requests += len(rows)
		for _, r := range rows {
			out["ttft"] = append(out["ttft"], r.TTFT)
			if r.Out > 1 {
				out["tpot"] = append(out["tpot"], r.TPOT)
			}
		}
	}
	return out, nil
}

// mean is the metric's mean over ts; nil when ts is empty or a trial has
// no value for it (a mean over the others would hide that).
func mean(m Metric, ts []Trial) *float64 {
	if len(ts) == 0 {
		return nil
	}
	sum := 0.0
	for _, t := range ts {
		v, ok := t.Value(m.Name)
		if !ok {
			return nil
		}
		sum += v
	}
	sum /= float64(len(ts))
	return &sum
}

func percentileOf(sample []float64, q float64) float64 {
	return percentile(slices.Sorted(slices.Values(sample)), q)
}
