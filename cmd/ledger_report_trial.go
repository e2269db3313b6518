package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/report"
	"github.com/autoinfer/autoinfer/trials"
)

// checkTrialReport rejects `trial run --report FILE` before any trial runs
// when FILE cannot be written.
func checkTrialReport(file string) error {
	if file == "" {
		return nil
	}
	if err := checkReportPath(file); err != nil {
		return usageErr("--report: %w", err)
	}
	return nil
}

// writeTrialReport writes the HTML report of the rows this run recorded
// (`trial run --report FILE`). The rows' SLO is the spec's, when every
// trial has the same one (a matrix may vary it).
func writeTrialReport(ctx context.Context, led *ledger.Ledger, ledgerPath, file string, ts []trials.Trial, results []trialResult) error {
	if file == "" {
		return nil
	}
	var sel report.Selection
	for _, r := range results {
		if r.RowID > 0 {
			sel.IDs = append(sel.IDs, r.RowID)
		}
	}
	if len(sel.IDs) == 0 {
		return nil // nothing was recorded; the run's own error says why
	}
	opt := report.Options{Ledger: ledgerPath, Generated: time.Now()}
	if len(ts) > 0 {
		base, _, _ := strings.Cut(ts[0].Name, "/") // a matrix trial's name is base/settings
		opt.Title = "autoinfer report: " + base
		if ts[0].SweepID != "" {
			opt.Title += " (sweep " + ts[0].SweepID + ")"
		}
		slo := ts[0].SLO
		same := true
		for _, t := range ts {
			same = same && t.SLO == slo
		}
		if same {
			opt.SLO = metrics.SLO{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2ELMs: slo.E2ELMs}
			opt.SLOSource = "the spec's slo"
		}
	}
	_, err := writeReport(ctx, led, sel, opt, file)
	return err
}
