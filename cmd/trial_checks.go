package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// checker resolves each trial's baseline comparison (the runner evaluates
// it, with the assertions, before the row is written).
type checker struct {
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

func newChecker(baseline, tolerance string) (*checker, error) {
	c := &checker{baseline: baseline, tolerance: -1}
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
// trial never becomes its own baseline, with the tolerance and metrics that
// apply. A zero Baseline means no baseline check.
func (c *checker) baselineFor(ctx context.Context, led *ledger.Ledger, t trials.Trial) (adapter.Baseline, error) {
	ref := c.baseline
	if ref == "" {
		ref = t.Baseline
	}
	if ref == "" {
		return adapter.Baseline{}, nil
	}
	row, err := resolveBaseline(ctx, led, ref)
	if err != nil {
		return adapter.Baseline{}, err
	}
	tol := c.tolerance
	if tol < 0 {
		tol = t.ToleranceFraction
	}
	if tol == 0 && t.Baseline == "" {
		// --baseline without a spec baseline or --tolerance: the default.
		tol, _ = trials.ParseTolerance(trials.DefaultTolerance)
	}
	return adapter.Baseline{Row: row, Tolerance: tol, Metrics: t.BaselineMetrics}, nil
}

func resolveBaseline(ctx context.Context, led *ledger.Ledger, ref string) (*ledger.Trial, error) {
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
	if row := side.Trials[0]; row.Status != ledger.StatusOK {
		return nil, fmt.Errorf("baseline %q: row %d is %s, not evidence to compare with", ref, row.ID, row.Status)
	}
	return &side.Trials[0], nil
}
