package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// checker applies the CI checks: the spec's assertions plus --assert, and
// the baseline comparison with its tolerance.
type checker struct {
	extra     []trials.Assertion
	baseline  string  // --baseline, overriding the spec
	tolerance float64 // --tolerance as a fraction; < 0 when not given
}

func parseAsserts(exprs []string) ([]trials.Assertion, error) {
	var out []trials.Assertion
	for i, e := range exprs {
		a, err := trials.ParseAssertion(e)
		if err != nil {
			return nil, usageErr("--assert[%d]: %v", i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func newChecker(extra []trials.Assertion, baseline, tolerance string) (*checker, error) {
	c := &checker{extra: extra, baseline: baseline, tolerance: -1}
	if tolerance != "" {
		tol, err := trials.ParseTolerance(tolerance)
		if err != nil {
			return nil, usageErr("--tolerance: %v", err)
		}
		c.tolerance = tol
	}
	return c, nil
}

// baselineFor resolves the trial's baseline row before the trial runs, so a
// trial never becomes its own baseline. nil means no baseline check.
func (c *checker) baselineFor(ctx context.Context, led *ledger.Ledger, t trials.Trial) (*ledger.Trial, error) {
	ref := c.baseline
	if ref == "" {
		ref = t.Baseline
	}
	if ref == "" {
		return nil, nil
	}
	side, err := led.Resolve(ctx, ref)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, fmt.Errorf("baseline %q: no such ok trial in the ledger (run the trial once without --baseline to record one)", ref)
		}
		return nil, fmt.Errorf("baseline %q: %w", ref, err)
	}
	if len(side.Trials) != 1 {
		return nil, fmt.Errorf("baseline %q resolves to %d trials (a sweep); name one trial id or name", ref, len(side.Trials))
	}
	return &side.Trials[0], nil
}

// check returns one message per violated assertion or baseline bound, each
// naming the metric, its value and the bound.
func (c *checker) check(t trials.Trial, out adapter.Outcome, base *ledger.Trial) []string {
	values := summaryValues(out)
	var v []string
	for _, a := range append(append([]trials.Assertion(nil), t.Assertions...), c.extra...) {
		if err := a.Check(values); err != nil {
			v = append(v, "assert: "+err.Error())
		}
	}
	if base != nil {
		tol := c.tolerance
		if tol < 0 {
			tol = t.ToleranceFraction
		}
		if tol == 0 && t.Baseline == "" {
			// --baseline without a spec baseline or --tolerance: the default.
			tol, _ = trials.ParseTolerance(trials.DefaultTolerance)
		}
		metrics := t.BaselineMetrics
		if len(metrics) == 0 {
			metrics = trials.DefaultBaselineMetrics
		}
		for _, name := range metrics {
			m, err := ledger.LookupMetric(name)
			if err != nil {
				v = append(v, fmt.Sprintf("baseline: %v", err))
				continue
			}
			if err := trials.Regression(name, values[name], m.Value(*base), tol); err != nil {
				v = append(v, fmt.Sprintf("baseline row %d: %v", base.ID, err))
			}
		}
	}
	return v
}

// summaryValues flattens the measured summary to its numeric keys (vllm
// bench serve's names), plus the trial-level figures assertions may use.
func summaryValues(out adapter.Outcome) map[string]float64 {
	vals := map[string]float64{}
	b, err := json.Marshal(out.Summary)
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
	vals["prefix_cache_hit_rate"] = out.PrefixCacheHitRate
	if out.Gate != nil {
		vals["gate_kl_mean"], vals["gate_kl_max"] = out.Gate.KLMean, out.Gate.KLMax
	}
	return vals
}
