package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/ledger"
)

// confirmedOut is one --confirm pair as printed.
type confirmedOut struct {
	Name      string               `json:"name"`
	Settings  string               `json:"settings"`
	Predicted int64                `json:"predicted_row"`
	Measured  int64                `json:"measured_row"`
	Refused   string               `json:"refused,omitempty"`
	Agrees    bool                 `json:"agrees"`
	Metrics   []ledger.MetricError `json:"metrics"`
	// The host's state during the real-time trial (what its overload
	// checks bound): the driver's p99 send lateness and the simulated
	// engines' lag ratio (nil: not measured).
	P99ScheduleDelayMs float64  `json:"p99_schedule_delay_ms"`
	EngineLagRatio     *float64 `json:"engine_lag_ratio"`
}

func confirmedRows(cs []search.Confirmed) []confirmedOut {
	out := make([]confirmedOut, len(cs))
	for i, c := range cs {
		out[i] = confirmedOut{Name: c.Candidate.Trial.Name, Settings: settingsOf(c.Candidate.Trial),
			Predicted: c.Pair.Predicted.ID, Measured: c.Pair.Measured.ID, Refused: c.Pair.Refused(), Agrees: c.Agrees(), Metrics: c.Errors,
			P99ScheduleDelayMs: c.Pair.Measured.P99ScheduleDelayMs, EngineLagRatio: c.Pair.Measured.EngineLagRatio}
	}
	return out
}

// renderConfirmed prints the pairs (table) or the whole answer (json).
// short says fewer candidates were feasible than --confirm asked for.
func renderConfirmed(w io.Writer, format string, res searchJSON, short bool) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "\nconfirmed in real time (sim target over HTTP, the spec's whole request stream), within %.0f %% = |measured/predicted − 1| ≤ %.2f:\n",
		ledger.PredictionTolerance*100, ledger.PredictionTolerance)
	if short {
		fmt.Fprintf(w, "(only %d feasible candidates to confirm)\n", len(res.Confirmed))
	}
	agree, refused := 0, 0
	for i, c := range res.Confirmed {
		fmt.Fprintf(w, "\n%d. %s: virtual row %d → real row %d", i+1, c.Settings, c.Predicted, c.Measured)
		switch {
		case c.Refused != "":
			refused++
			fmt.Fprintf(w, "  REFUSED (%s): not counted as agreement\n", c.Refused)
		case c.Agrees:
			agree++
			fmt.Fprintln(w, "  every metric within 5 %")
		default:
			fmt.Fprintln(w, "  NOT every metric within 5 %")
		}
		lag := noValue
		if c.EngineLagRatio != nil {
			lag = fmt.Sprintf("%.3g", *c.EngineLagRatio)
		}
		fmt.Fprintf(w, "   host during the real-time run: p99 schedule delay %.3g ms, engine lag ratio %s\n", c.P99ScheduleDelayMs, lag)
		renderMetricErrors(w, c.Metrics)
	}
	fmt.Fprintf(w, "\n%d of %d confirmed candidates within 5 %% on every metric; %d refused\n", agree, len(res.Confirmed), refused)
	if res.ConfirmNote != "" {
		fmt.Fprintln(w, res.ConfirmNote)
	}
	return nil
}

// renderMetricErrors is the per-metric table of a pair.
func renderMetricErrors(w io.Writer, es []ledger.MetricError) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "   metric\tpredicted\tmeasured\tmeasured/predicted\twithin 5 %")
	for _, e := range es {
		fmt.Fprintf(tw, "   %s\t%.4g\t%.4g\t%s\t%s\n", e.Metric, e.Predicted, e.Measured, ratioText(e.Ratio), ledgerYesNo(e.Within))
	}
	_ = tw.Flush()
}

func ratioText(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *r)
}
