package cmd

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

// ledgerComparePredicted is `ledger compare --predicted`: every real-time
// row that confirms a virtual prediction (search --confirm), with the
// prediction, the measurement and their ratio per metric.
func ledgerComparePredicted(c *cobra.Command, o *ledgerOpts, f ledgerFilterFlags) error {
	filter, err := f.filter()
	if err != nil {
		return err
	}
	// A confirmation made stale by a later one under another router config
	// is still a measurement of its own prediction.
	filter.IncludeStale = true
	l, err := o.open(c.Context())
	if err != nil {
		return err
	}
	defer l.Close()
	ps, err := l.Predictions(c.Context(), filter)
	if err != nil {
		return withCode(ExitInfra, err)
	}
	tbl := ledgerTable{header: []string{"measured_row", "predicted_row", "name", "status", "metric", "predicted", "measured", "measured_over_predicted", "within_5pct"}}
	type pairOut struct {
		Measured  int64                `json:"measured_row"`
		Predicted int64                `json:"predicted_row"`
		Name      string               `json:"name"`
		SweepID   string               `json:"predicted_sweep_id"`
		Refused   string               `json:"refused,omitempty"`
		Agrees    bool                 `json:"agrees"`
		Metrics   []ledger.MetricError `json:"metrics"`
	}
	var out []pairOut
	agree, refused := 0, 0
	for _, p := range ps {
		errs := p.Errors()
		status := "ok"
		if r := p.Refused(); r != "" {
			status, refused = "refused: "+r, refused+1
		} else if p.Agrees(errs) {
			agree++
		}
		for _, e := range errs {
			tbl.add(strconv.FormatInt(p.Measured.ID, 10), strconv.FormatInt(p.Predicted.ID, 10), p.Measured.Name, status, e.Metric,
				ledgerNum(e.Predicted), ledgerNum(e.Measured), ratioText(e.Ratio), ledgerYesNo(e.Within))
		}
		out = append(out, pairOut{Measured: p.Measured.ID, Predicted: p.Predicted.ID, Name: p.Measured.Name, SweepID: p.Predicted.SweepID,
			Refused: p.Refused(), Agrees: p.Agrees(errs), Metrics: errs})
	}
	if o.output == "table" {
		if len(ps) == 0 {
			fmt.Fprintln(c.OutOrStdout(), "no real-time row confirms a prediction (run `autoinfer search SPEC --confirm K`)")
			return nil
		}
		fmt.Fprintf(c.OutOrStdout(), "%d pairs (virtual prediction, real-time measurement): %d within %.0f %% on every metric, %d refused\n\n",
			len(ps), agree, ledger.PredictionTolerance*100, refused)
	}
	drifts := ledger.Drifts(ps)
	if err := ledgerRender(c.OutOrStdout(), o.output, tbl, map[string]any{"pairs": out, "agree": agree, "refused": refused,
		"tolerance": ledger.PredictionTolerance, "drift": drifts}); err != nil || o.output != "table" {
		return err
	}
	printDrift(c.OutOrStdout(), drifts)
	return nil
}

// printDrift says, per profile, whether the median error of its recent
// predictions exceeds the error it states, naming each metric that does.
func printDrift(w io.Writer, drifts []ledger.Drift) {
	for _, d := range drifts {
		name := d.Name
		if d.Profile != "" {
			name += " (" + d.Profile + ")"
		}
		if len(d.Exceeded) == 0 {
			fmt.Fprintf(w, "\nprofile %s: %d pairs; the median error of the last %d is within its stated error on every metric\n",
				name, len(d.Rows), min(len(d.Rows), ledger.DriftRecent))
			continue
		}
		fmt.Fprintf(w, "\nDRIFT: profile %s: the median error of its last %d predictions exceeds its stated error on", name, min(len(d.Rows), ledger.DriftRecent))
		for _, m := range d.Exceeded {
			fmt.Fprintf(w, " %s (%.1f %% > %.1f %%)", m, 100*d.Recent[m], 100*d.Bound(m))
		}
		fmt.Fprintln(w, "; recalibrate (sim calibrate --observe, or --from-ledger on the recent rows)")
	}
}
