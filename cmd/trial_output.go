package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/metric"
	"github.com/autoinfer/autoinfer/trials"
)

// sweepComparison is each later trial of a run against the first.
type sweepComparison struct {
	A, B        string
	Comparison  ledger.Comparison
	Significant []ledger.Interval
}

// compareSweep compares every ok trial with the first ok one, from the
// per-request records in the ledger (bootstrap confidence intervals). A
// repeated trial is one side (its replicate group), and only when complete.
func compareSweep(ctx context.Context, led *ledger.Ledger, rs []trialResult, gs []ledger.GroupResult) []sweepComparison {
	complete := map[string]bool{}
	for _, g := range gs {
		complete[g.Group] = g.Complete()
	}
	type side struct{ name, ref string }
	var ok []side
	for _, r := range rs {
		switch g := r.Replicate.Group; {
		case g != "":
			if complete[g] && r.Replicate.Index == 0 {
				ok = append(ok, side{r.Name, g})
			}
		case r.Status == ledger.StatusOK && r.RowID > 0:
			ok = append(ok, side{r.Name, strconv.FormatInt(r.RowID, 10)})
		}
	}
	var out []sweepComparison
	for _, r := range ok[min(1, len(ok)):] {
		c, err := led.Compare(ctx, ok[0].ref, r.ref, ledger.CompareOptions{})
		if err != nil {
			continue
		}
		out = append(out, sweepComparison{A: ok[0].name, B: r.name, Comparison: c})
	}
	return out
}

// notRun is a trial of the spec that was not run: it runs the same as an
// earlier one after defaults.
type notRun struct {
	Trial   string `json:"trial"`
	SameAs  string `json:"same_as"`
	Because string `json:"because"`
}

func renderTrialResults(w io.Writer, format string, rs []trialResult, gs []ledger.GroupResult, cmp []sweepComparison, skipped []trials.Trial, sweeps []adapter.SweepOutcome) error {
	nr := make([]notRun, len(skipped))
	for i, t := range skipped {
		nr[i] = notRun{Trial: t.Name, SameAs: t.SameAs, Because: t.SameBecause}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		doc := map[string]any{"trials": rs, "replicate_groups": gs, "not_run": nr, "comparisons": cmp}
		if len(sweeps) > 0 {
			doc["sweeps"] = sweeps
		}
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tTRIAL\tSTATUS\tOK/FAIL\tREQ/S\tOUT TOK/S\tTTFT p50/p99 ms\tTPOT p50/p99 ms\tCACHE HIT\tGATE KL\tMADE STALE\tNOTES")
	for _, r := range rs {
		s := r.Summary
		gateKL := "-"
		if r.Gate != nil {
			gateKL = fmt.Sprintf("%.4f %s", r.Gate.KLMean, map[bool]string{true: "pass", false: "FAIL"}[r.Gate.Passed])
		}
		var notes []string
		if r.Failure != nil {
			notes = append(notes, string(r.Failure.Kind())+": "+r.Failure.Error())
		}
		for _, v := range r.Violations {
			if v == r.Failure { // the row's failure, noted above
				continue
			}
			notes = append(notes, string(v.Kind())+": "+v.Error())
		}
		if r.BaselineRow > 0 {
			notes = append(notes, fmt.Sprintf("compared with baseline row %d", r.BaselineRow))
		}
		switch {
		case r.Clock == ledger.ClockVirtual:
			notes = append(notes, "virtual clock: predicted, not measured")
		case r.Router == nil:
			notes = append(notes, "no router (one replica)")
		}
		if rp := r.Replicate; rp.Group != "" {
			notes = append(notes, fmt.Sprintf("replicate %d of %s, seed %d", rp.Index+1, rp.Group, r.Seed))
		}
		if n := calibrationNote(r.Calibration); n != "" {
			notes = append(notes, n)
		}
		if wo := r.Warmup; wo.Failed > 0 {
			notes = append(notes, fmt.Sprintf("warm-up: %d of %d failed", wo.Failed, wo.Sent))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%.2f\t%.1f\t%.1f/%.1f\t%.2f/%.2f\t%s\t%s\t%d\t%s\n",
			r.RowID, clockLabel(r.Name, r.Clock), r.Status, s.Completed, s.Failed, s.RequestThroughput, s.OutputThroughput,
			s.P50TTFTMs, s.P99TTFTMs, s.P50TPOTMs, s.P99TPOTMs, percentOrDash(r.Window.PrefixCacheHitRate), gateKL,
			len(r.MarkedStale), strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	renderGroups(w, gs)
	if len(nr) > 0 {
		fmt.Fprintf(w, "\nnot run, the same trial after defaults as one above (%d):\n", len(nr))
		for _, n := range nr {
			fmt.Fprintf(w, "  %s = %s: %s\n", n.Trial, n.SameAs, n.Because)
		}
	}
	// The catalogue metrics (package metric) a sweep's comparison lists
	// besides the bootstrap intervals.
	headline := []string{"request_throughput", "output_throughput", "prefix_cache_hit_rate"}
	for _, c := range cmp {
		fmt.Fprintf(w, "\nA = %s, B = %s (B − A, %d bootstrap resamples, %.0f%% CI):\n",
			c.A, c.B, c.Comparison.Resamples, 100*c.Comparison.Confidence)
		for _, iv := range c.Comparison.Intervals {
			verdict := "no significant difference"
			if iv.Significant {
				verdict = iv.Better + " is better"
			}
			fmt.Fprintf(w, "  %-12s A %9.2f  B %9.2f  diff %+9.2f  [%+.2f, %+.2f]  %s\n",
				iv.Metric, iv.A, iv.B, iv.Diff, iv.Lo, iv.Hi, verdict)
		}
		for _, d := range c.Comparison.Metrics {
			if !slices.Contains(headline, d.Metric) {
				continue
			}
			m, err := metric.Lookup(d.Metric)
			if err != nil {
				return err
			}
			better := orDash(d.Better)
			switch {
			case d.NotSeparable:
				better = "not separable (intervals across replicates overlap)"
			case d.Better != "" && d.ACI == nil && d.BCI == nil:
				// A whole-run figure of one run a side has no interval: the
				// side is named, but not as if a difference of 0.1 % were
				// known to be one (repeats: gives the interval).
				better += " (one run each, no interval)"
			}
			fmt.Fprintf(w, "  %-22s A %14s  B %14s  better: %s\n", d.Metric, formatOrDash(m, d.A), formatOrDash(m, d.B), better)
		}
	}
	printTrialSweeps(w, sweeps)
	printTrialDrift(w, rs)
	return nil
}

// percentOrDash shows a fraction as a percentage, or noValue when it was
// not measured.
func percentOrDash(v *float64) string {
	if v == nil {
		return noValue
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

// formatOrDash renders v in the metric's unit, or noValue when it was not
// measured.
func formatOrDash(m metric.Metric, v *float64) string {
	if v == nil {
		return noValue
	}
	return m.Format(*v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// trialProgress shows the driver's progress: a bar on a terminal, a line
// per quarter otherwise (CI logs).
type trialProgress struct {
	w        io.Writer
	terminal bool
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	phase    string
	quarter  int
}

func newTrialProgress(w io.Writer) *trialProgress {
	return &trialProgress{w: w, terminal: isTerminal(w)}
}

func (p *trialProgress) start(i, n int, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%d/%d] %s\n", i, n, name)
	p.bar, p.phase, p.quarter = nil, "", 0
}

// skip says that trial i of n is not run, and why.
func (p *trialProgress) skip(i, n int, t trials.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%d/%d] %s: not run, same as %s (%s)\n", i, n, t.Name, t.SameAs, t.SameBecause)
}

func (p *trialProgress) update(pr driver.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Phase != p.phase {
		p.phase, p.quarter = pr.Phase, 0
		if p.bar != nil {
			_ = p.bar.Finish()
		}
		p.bar = nil
		if p.terminal {
			p.bar = progressbar.NewOptions(pr.Total, progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription("  "+pr.Phase), progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish())
		}
	}
	if p.bar != nil {
		_ = p.bar.Set(pr.Done)
		return
	}
	if pr.Total > 0 && pr.Done*4/pr.Total > p.quarter {
		p.quarter = pr.Done * 4 / pr.Total
		fmt.Fprintf(p.w, "  %s: %d/%d requests\n", pr.Phase, pr.Done, pr.Total)
	}
}

func (p *trialProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
