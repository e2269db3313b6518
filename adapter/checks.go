package adapter

import (
	"fmt"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// Baseline is the row a trial is compared with and how much worse it may
// be. The caller resolves it before the trial runs, so a trial is never
// its own baseline.
type Baseline struct {
	Row *ledger.Trial
	// Tolerance is a fraction: 0.1 lets a metric be 10 % worse.
	Tolerance float64
	// Metrics are the compared metrics (trials.DefaultBaselineMetrics when
	// empty).
	Metrics []string
}

// checkFailures evaluates the trial's assertions (the spec's plus
// Options.Assertions) and its baseline against the measured values, and
// returns one typed failure per violation, in that order. They are part
// of the record: a violation makes the row failed before it is written.
func (tr *trialRun) checkFailures(values map[string]float64) []failure.Failure {
	var out []failure.Failure
	asserts := append(append([]trials.Assertion(nil), tr.t.Assertions...), tr.opts.Assertions...)
	for _, a := range asserts {
		v, ok := values[a.Metric]
		switch {
		case !ok:
			out = append(out, failure.Unknown{Message: fmt.Sprintf("assertion %q: %s was not measured", a, a.Metric)})
		case !a.Holds(v):
			out = append(out, failure.AssertionViolated{Metric: a.Metric, Value: v, Op: a.Op, Bound: a.Value})
		}
	}
	b := tr.baseline
	if b.Row == nil {
		return out
	}
	metrics := b.Metrics
	if len(metrics) == 0 {
		metrics = trials.DefaultBaselineMetrics
	}
	for _, name := range metrics {
		v, ok := values[name]
		base, stored := b.Row.Value(name)
		switch {
		case !stored:
			// The spec's baseline_metrics are validated against the
			// catalogue's stored metrics; this is a caller's Baseline.
			out = append(out, failure.Unknown{Message: fmt.Sprintf("baseline: metric %q is not a ledger column", name)})
			continue
		case !ok:
			out = append(out, failure.Unknown{Message: fmt.Sprintf("baseline row %d: %s was not measured", b.Row.ID, name)})
			continue
		}
		if trials.Regression(name, v, base, b.Tolerance) != nil {
			out = append(out, failure.BaselineRegressed{Metric: name, Value: v, BaselineRow: b.Row.ID,
				BaselineValue: base, Tolerance: b.Tolerance})
		}
	}
	return out
}

// checkValues are the figures checks read: the row's (package metric's
// names, its columns), plus the latency percentiles the driver computed on
// demand for them, which have no column (p95_ttft_ms).
func checkValues(row ledger.Trial, s driver.Summary) map[string]float64 {
	vals := row.Values()
	for k, v := range s.ExtraPercentiles {
		vals[k] = v
	}
	return vals
}
