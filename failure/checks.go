package failure

import (
	"fmt"
	"strconv"
)

// The kinds a trial's own checks produce: a trial that ran cleanly but
// violated an `assert:`/--assert bound or regressed past its baseline. The
// row is failed, so it never competes in Pareto fronts and never marks
// other rows stale: it is not evidence of a better setting.
const (
	KindAssertionViolated Kind = "AssertionViolated"
	KindBaselineRegressed Kind = "BaselineRegressed"
)

// AssertionViolated means a measured metric broke an assertion, e.g.
// p99_ttft_ms = 612.4 with the bound "< 500".
type AssertionViolated struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// Op is the comparison the value had to satisfy against Bound.
	Op    string  `json:"op"`
	Bound float64 `json:"bound"`
}

// BaselineRegressed means a metric was worse than the baseline row's value
// by more than the tolerance (a fraction: 0.1 is 10 %).
type BaselineRegressed struct {
	Metric        string  `json:"metric"`
	Value         float64 `json:"value"`
	BaselineRow   int64   `json:"baseline_row"`
	BaselineValue float64 `json:"baseline_value"`
	Tolerance     float64 `json:"tolerance"`
}

// Kind implements Failure.
func (AssertionViolated) Kind() Kind { return KindAssertionViolated }

// Kind implements Failure.
func (BaselineRegressed) Kind() Kind { return KindBaselineRegressed }

func (f AssertionViolated) Error() string {
	return fmt.Sprintf("assertion violated: %s = %s, want %s %s", f.Metric, round(f.Value), f.Op, round(f.Bound))
}

func (f BaselineRegressed) Error() string {
	return fmt.Sprintf("regressed against baseline row %d: %s = %s, baseline %s, tolerance %s%%",
		f.BaselineRow, f.Metric, round(f.Value), round(f.BaselineValue), round(100*f.Tolerance))
}

// round shows a figure to 4 significant digits: messages are read by
// people, the exact value is in the failure's JSON.
func round(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
