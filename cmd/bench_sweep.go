package cmd

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/sweep"
)

// ProfileSweep is --profile sweep.
const ProfileSweep = "sweep"

// checkSweepFlags refuses flags a sweep sets itself.
func (f *benchFlags) checkSweepFlags() error {
	if f.profile == "" {
		if f.fs.Changed("rates") || f.fs.Changed("knee-attainment") {
			return usageErr("--rates, --knee-attainment: only with --profile sweep")
		}
		return nil
	}
	if f.profile != ProfileSweep {
		return usageErr("--profile: want sweep, got %q", f.profile)
	}
	for _, fl := range []string{"request-rate", "ramp-up-strategy", "max-seconds"} {
		if f.fs.Changed(fl) {
			return usageErr("--%s: a sweep sets each run's arrival; drop it with --profile sweep", fl)
		}
	}
	if len(f.goodput) == 0 {
		return usageErr("--goodput: --profile sweep needs SLOs: the knee is the highest rate meeting them")
	}
	if f.rates < 0 {
		return usageErr("--rates: must be >= 1, got %d", f.rates)
	}
	return nil
}

// runSweep runs the sweep profile and prints one line per run and the knee.
func runSweep(ctx context.Context, f *benchFlags, cfg driver.Config, out, errOut io.Writer) error {
	cfg.Arrival = driver.Arrival{MaxConcurrency: cfg.Arrival.MaxConcurrency, Burstiness: cfg.Arrival.Burstiness}
	prog := newProgress(errOut, !f.disableTqdm && isTerminal(out))
	opts := sweep.Options{Rates: f.rates, Attainment: f.kneeAttainment, Kind: f.arrival,
		Progress: func(label string, p driver.Progress) {
			if p.Total == 0 {
				fmt.Fprintf(errOut, "sweep: %s run\n", label)
				return
			}
			prog.update(p)
		}}
	res, err := sweep.Run(ctx, cfg, opts)
	prog.finish()
	if res == nil {
		return usageErr("%s", f.flagError(err))
	}
	printSweep(out, res, f.kneeAttainment)
	if serr := f.saveSweep(out, res); serr != nil {
		return withCode(ExitInfra, serr)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return withCode(ExitInterrupted, fmt.Errorf("sweep interrupted: %w", err))
	case err != nil:
		return withCode(ExitInfra, err)
	}
	return nil
}

func printSweep(w io.Writer, res *sweep.Result, attainment float64) {
	fmt.Fprintf(w, "%s\n", center(" Sweep ", '='))
	fmt.Fprintf(w, "%-12s %10s %10s %10s %9s %10s %10s\n", "run", "offered", "achieved", "goodput", "in SLO", "p99 TTFT", "p99 TPOT")
	for i, p := range res.Points {
		s := p.Result.Summary
		offered := "-"
		if p.Rate > 0 {
			offered = fmt.Sprintf("%.2f", p.Rate)
		}
		good := 0.0
		if s.RequestGoodput != nil {
			good = *s.RequestGoodput
		}
		mark := ""
		if i == res.Knee {
			mark = "  <- knee"
		}
		fmt.Fprintf(w, "%-12s %10s %10.2f %10.2f %8.1f%% %10.1f %10.1f%s\n", p.Label, offered, s.RequestThroughput, good,
			100*p.Attainment, s.P99TTFTMs, s.P99TPOTMs, mark)
	}
	fmt.Fprintln(w, "(rates in req/s; latencies in ms; \"in SLO\": requests meeting every --goodput bound)")
	if k := res.KneePoint(); k != nil {
		fmt.Fprintf(w, "Knee: %.2f req/s (%s): the highest rate with >= %.0f%% of requests within the SLOs\n", k.Rate, k.Label, 100*attainment)
	} else {
		fmt.Fprintf(w, "Knee: none: no rate between %.2f and %.2f req/s had >= %.0f%% of requests within the SLOs\n",
			res.SyncRate, res.MaxRate, 100*attainment)
	}
	fmt.Fprintf(w, "%s\n", strings.Repeat("=", 50))
}

// saveSweep writes one result object per run (one JSON line each), with
// the sweep's own keys added: sweep_run, slo_attainment, sweep_knee.
func (f *benchFlags) saveSweep(out io.Writer, res *sweep.Result) error {
	if !f.saveResult && !f.saveDetailed {
		return nil
	}
	meta, err := parseMetadata(f.metadata)
	if err != nil {
		return err
	}
	var all []byte
	for i, p := range res.Points {
		b, err := resultJSON(p.Result, f.saveDetailed)
		if err != nil {
			return err
		}
		m := map[string]string{"sweep_run": p.Label, "slo_attainment": fmt.Sprintf("%.4f", p.Attainment),
			"sweep_knee": fmt.Sprint(i == res.Knee)}
		for k, v := range meta {
			m[k] = v
		}
		if b, err = withMetadata(b, m); err != nil {
			return err
		}
		all = append(all, b...)
	}
	name := f.resultFilename
	if name == "" && len(res.Points) > 0 {
		s := res.Points[0].Result.Summary
		name = strings.TrimSuffix(defaultResultName(s), ".json")
		name = strings.Replace(name, rateName(float64(s.RequestRate)), "sweep", 1) + ".jsonl"
	}
	path := filepath.Join(f.resultDir, name)
	write := writeOutput
	if f.appendResult {
		write = appendOutput
	}
	if err := write(path, func(w io.Writer) error { _, err := w.Write(all); return err }); err != nil {
		return err
	}
	fmt.Fprintf(out, "Sweep results saved to %s\n", path)
	return nil
}

func rateName(r float64) string {
	if math.IsInf(r, 1) {
		return "infqps"
	}
	return fmt.Sprint(r) + "qps"
}
