package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/ledger"
)

// sweepComparison is each later trial of a run against the first.
type sweepComparison struct {
	A, B        string
	Comparison  ledger.Comparison
	Significant []ledger.Interval
}

// compareSweep compares every ok trial with the first ok one, from the
// per-request records in the ledger (bootstrap confidence intervals).
func compareSweep(ctx context.Context, led *ledger.Ledger, rs []trialResult) []sweepComparison {
	var ok []trialResult
	for _, r := range rs {
		if r.Status == ledger.StatusOK && r.RowID > 0 {
			ok = append(ok, r)
		}
	}
	var out []sweepComparison
	for _, r := range ok[min(1, len(ok)):] {
		c, err := led.Compare(ctx, strconv.FormatInt(ok[0].RowID, 10), strconv.FormatInt(r.RowID, 10), ledger.CompareOptions{})
		if err != nil {
			continue
		}
		out = append(out, sweepComparison{A: ok[0].Name, B: r.Name, Comparison: c})
	}
	return out
}

func renderTrialResults(w io.Writer, format string, rs []trialResult, cmp []sweepComparison, sweeps []adapter.SweepOutcome) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		doc := map[string]any{"trials": rs, "comparisons": cmp}
		if len(sweeps) > 0 {
			doc["sweeps"] = sweeps
		}
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tTRIAL\tSTATUS\tOK/FAIL\tREQ/S\tOUT TOK/S\tTTFT p50/p99 ms\tTPOT p50/p99 ms\tCACHE HIT\tGATE KL\tSTALE\tNOTES")
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
		if r.Router == nil {
			notes = append(notes, "no router (one replica)")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%.2f\t%.1f\t%.1f/%.1f\t%.2f/%.2f\t%.1f%%\t%s\t%d\t%s\n",
			r.RowID, r.Name, r.Status, s.Completed, s.Failed, s.RequestThroughput, s.OutputThroughput,
			s.P50TTFTMs, s.P99TTFTMs, s.P50TPOTMs, s.P99TPOTMs, 100*r.PrefixCacheHitRate, gateKL,
			len(r.MarkedStale), strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
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
		for _, m := range c.Comparison.Metrics {
			if m.Metric == "output_throughput" || m.Metric == "request_throughput" || m.Metric == "prefix_cache_hit_rate" {
				fmt.Fprintf(w, "  %-22s A %9.3f  B %9.3f  better: %s\n", m.Metric, m.A, m.B, orDash(m.Better))
			}
		}
	}
	printTrialSweeps(w, sweeps)
	return nil
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
