package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/trials"
)

// runSweepTrial runs sweep trial t (the i-th of n): each of its runs is a
// trial of its own, shown in the progress and returned as a result.
func runSweepTrial(ctx context.Context, runner *adapter.Runner, t trials.Trial, i, n int, prog *trialProgress) (adapter.SweepOutcome, []trialResult, error) {
	runs := 0
	sw, err := runner.RunSweep(ctx, t, func(rt trials.Trial) {
		prog.finish()
		runs++
		prog.start(i, n, fmt.Sprintf("%s (sweep run %d of %d)", rt.Name, runs, t.SweepRates()+2))
	})
	prog.finish()
	rs := make([]trialResult, len(sw.Points))
	for k, p := range sw.Points {
		rs[k] = trialResult{Outcome: p.Outcome, Elapsed: p.Elapsed}
	}
	return sw, rs, err
}

// printTrialSweeps prints each sweep's curve: one line per run, then the
// knee (the highest rate whose requests meet the SLOs).
func printTrialSweeps(w io.Writer, sweeps []adapter.SweepOutcome) {
	for _, sw := range sweeps {
		fmt.Fprintf(w, "\nSweep %s (sweep id %s): a rate meets the SLOs when >= %.0f%% of its requests do\n", sw.Name, sw.SweepID, 100*sw.Threshold)
		fmt.Fprintf(w, "  %-5s %-12s %9s %9s %9s %8s %10s %10s %10s\n", "ROW", "RUN", "OFFERED", "ACHIEVED", "GOODPUT", "IN SLO", "p99 TTFT", "p99 TPOT", "p99 E2EL")
		for k, p := range sw.Points {
			s := p.Summary
			offered := "-"
			if p.Rate > 0 {
				offered = fmt.Sprintf("%.4g", p.Rate)
			}
			good := "-"
			if s.RequestGoodput != nil {
				good = fmt.Sprintf("%.2f", *s.RequestGoodput)
			}
			mark := ""
			switch {
			case k == sw.Knee:
				mark = "  <- knee"
			case p.Failure != nil:
				mark = "  " + string(p.Failure.Kind())
			}
			fmt.Fprintf(w, "  %-5d %-12s %9s %9.2f %9s %7.1f%% %10.1f %10.1f %10.1f%s\n", p.RowID, p.Role, offered, s.RequestThroughput, good,
				100*p.Attainment, s.P99TTFTMs, s.P99TPOTMs, s.P99E2ELMs, mark)
		}
		fmt.Fprintf(w, "  Knee: %s\n", sw.Note)
	}
}
