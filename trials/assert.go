package trials

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// Check looks the metric up in results (vllm bench serve keys) and returns
// nil when it holds, else an error naming the metric, its value and the
// bound: "p99_ttft_ms = 612.4, want < 500".
func (a Assertion) Check(results map[string]float64) error {
	v, ok := results[a.Metric]
	if !ok {
		return fmt.Errorf("assertion %q: metric %s was not measured", a, a.Metric)
	}
	if !a.Holds(v) {
		return fmt.Errorf("%s = %s, want %s %s", a.Metric, strconv.FormatFloat(v, 'g', 6, 64), a.Op, strconv.FormatFloat(a.Value, 'g', -1, 64))
	}
	return nil
}

var assertionRE = regexp.MustCompile(`^\s*([A-Za-z0-9_.]+)\s*(<=|>=|<|>)\s*(\S+)\s*$`)

// ParseAssertion parses "p99_ttft_ms < 500".
func ParseAssertion(s string) (Assertion, error) {
	m := assertionRE.FindStringSubmatch(s)
	if m == nil {
		return Assertion{}, fmt.Errorf("%q: want METRIC OP NUMBER with OP one of < <= > >=, e.g. \"p99_ttft_ms < 500\"", s)
	}
	if !IsMetric(m[1]) {
		return Assertion{}, fmt.Errorf("%q: unknown metric %q (vllm bench serve keys such as p99_ttft_ms, mean_tpot_ms, output_throughput)", s, m[1])
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Assertion{}, fmt.Errorf("%q: %q is not a number", s, m[3])
	}
	return Assertion{Metric: m[1], Op: m[2], Value: v}, nil
}

// Metrics that are not latency statistics, as vllm bench serve names them
// in its result JSON, plus autoinfer's gate and measured-window figures.
var scalarMetrics = []string{
	"completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
	"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"max_output_tokens_per_s", "max_concurrent_requests",
	"gate_kl_mean", "gate_kl_max", "prefix_cache_hit_rate", "all_tiers_hit_rate", "preemptions",
	"cpu_tier_hits", "engine_lag_ratio",
}

// latencyMetricRE matches vllm bench serve's latency keys: mean_ttft_ms,
// median_itl_ms, std_e2el_ms, p99_tpot_ms, p99.9_ttft_ms.
var latencyMetricRE = regexp.MustCompile(`^(mean|median|std|p(\d+(\.\d+)?))_(ttft|tpot|itl|e2el)_ms$`)

// IsMetric reports whether name is a metric assertions and baselines may use.
func IsMetric(name string) bool {
	return slices.Contains(scalarMetrics, name) || latencyMetricRE.MatchString(name)
}

// Percentile returns P for a "p{P}_…_ms" metric (99 for p99_ttft_ms), so the
// runner can make the driver compute every percentile a spec refers to.
func Percentile(metric string) (float64, bool) {
	m := latencyMetricRE.FindStringSubmatch(metric)
	if m == nil || m[2] == "" {
		return 0, false
	}
	p, err := strconv.ParseFloat(m[2], 64)
	return p, err == nil && p > 0 && p < 100
}

// LowerIsBetter says which way a metric improves: latencies and failures go
// down, throughputs and completions go up.
func LowerIsBetter(metric string) bool {
	switch {
	case strings.HasSuffix(metric, "_ms"), metric == "failed", metric == "duration", strings.HasPrefix(metric, "gate_kl_"),
		metric == "preemptions", metric == "engine_lag_ratio":
		return true
	}
	return false
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
func Regression(metric string, value, baseline, tol float64) error {
	if LowerIsBetter(metric) {
		bound := baseline * (1 + tol)
		if value > bound {
			return fmt.Errorf("%s = %s, baseline %s: above the bound %s (+%s%%)", metric, fmtNum(value), fmtNum(baseline), fmtNum(bound), fmtNum(tol*100))
		}
		return nil
	}
	bound := baseline * (1 - tol)
	if value < bound {
		return fmt.Errorf("%s = %s, baseline %s: below the bound %s (-%s%%)", metric, fmtNum(value), fmtNum(baseline), fmtNum(bound), fmtNum(tol*100))
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
		if p, ok := Percentile(m); ok && !slices.Contains(ps, p) {
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
