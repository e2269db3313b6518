package trials

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/ledger/metric"
)

// Assertion is one parsed `assert:` entry: Metric Op Value.
type Assertion struct {
	Metric string  `json:"metric"`
	Op     string  `json:"op"` // <, <=, > or >=
	Value  float64 `json:"value"`
}

func (a Assertion) String() string {
	return fmt.Sprintf("%s %s %s", a.Metric, a.Op, strconv.FormatFloat(a.Value, 'g', -1, 64))
}

// Holds reports whether v satisfies the assertion.
func (a Assertion) Holds(v float64) bool {
	switch a.Op {
	case "<":
		return v < a.Value
	case "<=":
		return v <= a.Value
	case ">":
		return v > a.Value
	case ">=":
		return v >= a.Value
	}
	return false
}

var assertionRE = regexp.MustCompile(`^\s*([A-Za-z0-9_.]+)\s*(<=|>=|<|>)\s*(\S+)\s*$`)

// ParseAssertion parses "p99_ttft_ms < 500". The metric is any the trial
// measures (the catalogue, package metric, plus on-demand latency
// percentiles such as p95_ttft_ms).
func ParseAssertion(s string) (Assertion, error) {
	m := assertionRE.FindStringSubmatch(s)
	if m == nil {
		return Assertion{}, fmt.Errorf("%q: want METRIC OP NUMBER with OP one of < <= > >=, e.g. \"p99_ttft_ms < 500\"", s)
	}
	if _, err := metric.Measured(m[1]); err != nil {
		return Assertion{}, fmt.Errorf("%q: %w", s, err)
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Assertion{}, fmt.Errorf("%q: %q is not a number", s, m[3])
	}
	return Assertion{Metric: m[1], Op: m[2], Value: v}, nil
}

// ParseTolerance parses "10%" (or a plain fraction "0.1") into 0.1.
func ParseTolerance(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if rest, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(rest), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("%q: want a percentage such as 10%% or a fraction such as 0.1", s)
	}
	return v * scale, nil
}

// Regression compares a metric with its baseline value under tolerance tol
// (a fraction) and returns nil when it is within bounds, else an error
// naming the metric, both values and the bound.
func Regression(name string, value, baseline, tol float64) error {
	if m, _ := metric.Measured(name); m.Direction == metric.Minimize {
		bound := baseline * (1 + tol)
		if value > bound {
			return fmt.Errorf("%s = %s, baseline %s: above the bound %s (+%s%%)", name, fmtNum(value), fmtNum(baseline), fmtNum(bound), fmtNum(tol*100))
		}
		return nil
	}
	bound := baseline * (1 - tol)
	if value < bound {
		return fmt.Errorf("%s = %s, baseline %s: below the bound %s (-%s%%)", name, fmtNum(value), fmtNum(baseline), fmtNum(bound), fmtNum(tol*100))
	}
	return nil
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// Percentiles lists the percentiles the trial's assertions and baseline
// metrics refer to (99 for p99_ttft_ms), sorted and without duplicates, so
// the runner can ask the driver to compute them.
func (t Trial) Percentiles() []float64 {
	var ps []float64
	for _, m := range append(slices.Clone(t.BaselineMetrics), assertionMetrics(t.Assertions)...) {
		if p, ok := metric.Percentile(m); ok && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

func assertionMetrics(as []Assertion) []string {
	ms := make([]string, len(as))
	for i, a := range as {
		ms[i] = a.Metric
	}
	return ms
}
