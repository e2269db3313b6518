package adapter

import (
	"encoding/json"
	"fmt"

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
		m, err := ledger.LookupMetric(name)
		if err != nil {
			out = append(out, failure.Unknown{Message: "baseline: " + err.Error()})
			continue
		}
		v, ok := values[name]
		if !ok {
			out = append(out, failure.Unknown{Message: fmt.Sprintf("baseline row %d: %s was not measured", b.Row.ID, name)})
			continue
		}
		base, ok := m.Lookup(*b.Row)
		if !ok {
			out = append(out, failure.Unknown{Message: fmt.Sprintf("baseline row %d has no %s (not measured)", b.Row.ID, name)})
			continue
		}
		if trials.Regression(name, v, base, b.Tolerance) != nil {
			out = append(out, failure.BaselineRegressed{Metric: name, Value: v, BaselineRow: b.Row.ID,
				BaselineValue: base, Tolerance: b.Tolerance})
		}
	}
	return out
}

// Values flattens the outcome to the metric values assertions and
// baselines read: the summary's numeric keys (vllm bench serve's names),
// plus the trial-level figures. A figure that was not measured is absent.
func (o Outcome) Values() map[string]float64 {
	vals := map[string]float64{}
	b, err := json.Marshal(o.Summary)
	if err == nil {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			for k, x := range m {
				if f, ok := x.(float64); ok {
					vals[k] = f
				}
			}
		}
	}
	w := o.Window
	for name, v := range map[string]*float64{"prefix_cache_hit_rate": w.PrefixCacheHitRate,
		"all_tiers_hit_rate": w.AllTiersHitRate, "engine_lag_ratio": w.EngineLagRatio} {
		if v != nil {
			vals[name] = *v
		}
	}
	for name, v := range map[string]*int64{"preemptions": w.Preemptions, "cpu_tier_hits": w.CPUTierHits} {
		if v != nil {
			vals[name] = float64(*v)
		}
	}
	if o.Gate != nil {
		vals["gate_kl_mean"], vals["gate_kl_max"] = o.Gate.KLMean, o.Gate.KLMax
	}
	return vals
}
