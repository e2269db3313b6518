package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

func newLedgerCompareCmd(o *ledgerOpts) *cobra.Command {
	var opt ledger.CompareOptions
	var predicted bool
	var filters ledgerFilterFlags
	c := &cobra.Command{
		Use:   "compare A B | compare --predicted",
		Short: "Two trials or sweeps side by side, with bootstrap CIs on TTFT/TPOT p50 and p99",
		Long: `Compare two trials (or sweeps) metric by metric, and bootstrap confidence
intervals on the differences (B − A) of TTFT and TPOT p50 and p99 from the
per-request records. A difference is significant when its interval excludes 0;
the lower latency is better.

A and B each resolve, first match wins: a number is a trial id; a replicate
group id is every replicate of a repeated trial; a sweep id is every ok trial
of that sweep (requests pooled, metrics averaged); otherwise a name is the
latest ok trial with that name (its whole replicate group if it is a
replicate).

A replicate group shows each metric as its mean with a 95% Student t interval
across replicates (a_ci, b_ci). Where an interval reaches the other side's
value or interval the metric is "not separable" and neither side is called
better. A group with a failed or missing replicate is refused.

With --predicted (and no A B) it lists the pairs of a virtual prediction and
the real-time row that measured it (autoinfer search --confirm): per pair and
metric the prediction, the measurement, measured/predicted and whether that
is within 5 %. A measurement that did not run ok is shown as refused and
never counts as agreement. --name, --sweep and --where select the measured
(real-time) rows; --where predicted_by=ID one prediction's.`,
		Example: `  autoinfer ledger compare 12 13
  autoinfer ledger compare quickstart/router.policy=round_robin quickstart/router.policy=cache_aware --seed 7
  autoinfer ledger compare --predicted`,
		Args: func(c *cobra.Command, args []string) error {
			if predicted {
				return cobra.NoArgs(c, args)
			}
			return cobra.ExactArgs(2)(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if predicted {
				return ledgerComparePredicted(c, o, filters)
			}
			for _, fl := range []string{"name", "sweep", "where", "bound", "include-virtual"} {
				if c.Flags().Changed(fl) {
					return usageErr("--%s: only with --predicted (A and B name the rows to compare)", fl)
				}
			}
			if opt.Resamples <= 0 {
				return usageErr("--resamples %d: want a positive count", opt.Resamples)
			}
			if opt.Confidence <= 0 || opt.Confidence >= 1 {
				return usageErr("--confidence %g: want a level in (0, 1), e.g. 0.95", opt.Confidence)
			}
			if opt.Seed == 0 {
				return usageErr("--seed 0: want a non-zero seed")
			}
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			cmp, err := l.Compare(c.Context(), args[0], args[1], opt)
			if err != nil {
				return ledgerNotFound(err)
			}
			return ledgerRenderComparison(c, o.output, cmp)
		},
	}
	c.Flags().BoolVar(&predicted, "predicted", false, "list (virtual prediction, real-time measurement) pairs from search --confirm instead")
	filters.register(c)
	c.Flags().IntVar(&opt.Resamples, "resamples", 2000, "bootstrap resamples")
	c.Flags().Float64Var(&opt.Confidence, "confidence", 0.95, "confidence level of the intervals")
	c.Flags().Uint64Var(&opt.Seed, "seed", 1, "bootstrap seed (equal seeds, equal intervals)")
	return c
}

func ledgerRenderComparison(c *cobra.Command, format string, cmp ledger.Comparison) error {
	w := c.OutOrStdout()
	// A side is labelled by its trials' names; ids (and a sweep's id)
	// follow in brackets.
	side := func(s ledger.Side) string {
		ids := make([]string, len(s.IDs))
		for i, id := range s.IDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		ref := "trial " + strings.Join(ids, ",")
		if s.Resolved == "sweep" {
			ref = "sweep " + s.Ref + ": trials " + strings.Join(ids, ",")
		}
		if g := s.Group; g != nil {
			// Replicates share one name: say it once.
			return fmt.Sprintf("%s (replicate group %s: %d replicates, trials %s, %d requests; a_ci/b_ci: %g%% Student t across replicates)",
				g.Name, g.Group, g.Replicates, strings.Join(ids, ","), s.Requests, g.Confidence*100)
		}
		return fmt.Sprintf("%s (%s, %d requests)", strings.Join(s.Names, ", "), ref, s.Requests)
	}
	// Table and CSV share one shape: a section column keeps the metric rows
	// and the interval rows apart.
	tbl := ledgerTable{header: []string{"section", "metric", "a", "b", "diff_b_minus_a", "ci_low", "ci_high", "significant", "better", "a_ci", "b_ci"}}
	for _, iv := range cmp.Intervals {
		tbl.add("bootstrap", iv.Metric, ledgerNum(iv.A), ledgerNum(iv.B), ledgerNum(iv.Diff), ledgerNum(iv.Lo), ledgerNum(iv.Hi),
			ledgerYesNo(iv.Significant), iv.Better, "", "")
	}
	ci := func(e *ledger.Estimate) string {
		if e == nil {
			return ""
		}
		return "±" + ledgerNum(e.HalfWidth())
	}
	for _, d := range cmp.Metrics {
		better := d.Better
		if d.NotSeparable {
			better = "not separable"
		}
		tbl.add("metric", d.Metric, ledgerOptNum(d.A), ledgerOptNum(d.B), ledgerOptNum(d.Diff), "", "", "", better, ci(d.ACI), ci(d.BCI))
	}
	// A side's gain over its zero-reuse control: a is the control, b the
	// side, so diff_b_minus_a is the gain.
	for _, g := range cmp.Controls {
		for _, d := range g.Metrics {
			tbl.add("control_"+strings.ToLower(g.Side), d.Metric, ledgerOptNum(d.A), ledgerOptNum(d.B), ledgerOptNum(d.Diff), "", "", "", d.Better, "", "")
		}
	}
	if format == "table" {
		fmt.Fprintf(w, "A: %s\nB: %s\n", side(cmp.A), side(cmp.B))
		fmt.Fprintf(w, "bootstrap: %d resamples, %g%% intervals, seed %d", cmp.Resamples, cmp.Confidence*100, cmp.Seed)
		if len(cmp.Intervals) == 0 {
			fmt.Fprint(w, " (no per-request records on one side: no intervals)")
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "shed (503/429 of offered): A %.1f %% (%d of %d), B %.1f %% (%d of %d)\n",
			100*cmp.AShed.Rate, cmp.AShed.Shed, cmp.AShed.Offered, 100*cmp.BShed.Rate, cmp.BShed.Shed, cmp.BShed.Offered)
		if cmp.ShedFlag != "" {
			fmt.Fprintln(w, "FLAG: "+cmp.ShedFlag)
		}
		for _, g := range cmp.Controls {
			fmt.Fprintf(w, "control of %s: %s (zero_reuse; rows control_%s: a the control, b %s, diff the gain over control)\n",
				g.Side, strings.Join(g.Control.Names, ", "), strings.ToLower(g.Side), g.Side)
		}
		printRoutes(w, cmp.Routes)
		fmt.Fprintln(w)
	}
	return ledgerRender(w, format, tbl, map[string]any{
		"a": cmp.A, "b": cmp.B, "resamples": cmp.Resamples, "confidence": cmp.Confidence, "seed": cmp.Seed,
		"intervals": cmp.Intervals, "metrics": cmp.Metrics, "a_shed": cmp.AShed, "b_shed": cmp.BShed, "shed_flag": cmp.ShedFlag,
		"controls": cmp.Controls, "routes": cmp.Routes,
	})
}

func ledgerYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
