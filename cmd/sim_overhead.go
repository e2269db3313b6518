package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// overheadFlags are `sim overhead`'s flags.
type overheadFlags struct {
	trial             string
	output            string
	maxScheduleDelay  time.Duration
	maxEngineLagRatio float64
}

func newSimOverheadCmd() *cobra.Command {
	var f overheadFlags
	cmd := &cobra.Command{
		Use:   "overhead SPEC",
		Short: "Measure what the real HTTP path adds to a sim-target trial over the virtual clock (its http_overhead_ms)",
		Long: `Run one trial of SPEC (the first, or --trial) on the simulated target twice:
once in real time over HTTP, then on the virtual clock, with the gate off,
into a temporary ledger. Both runs send the same request stream, so request
i is the same bytes at the same intended time in each.

The real run's engines report each step's lag behind its planned end (the
timer and goroutine wake-up), whose median is the spec's engine_lag_ms, and
for each step planned on waking from idle how late it completed beyond the
waking request's submit plus the step's time, whose median is
engine_wake_ms; the virtual run then models both. The per-request differences left (real
minus virtual) are what the HTTP path and the router hop add; their median
TTFT difference is the spec's http_overhead_ms, and the engines' timings
split it into the part before the engine (http_inbound_ms) and after. With
these values, virtual runs of this deployment on this host predict
real-time latencies (docs/whatif.md). Measure on a quiet host: a real-time
run the host could not keep up with ends HostOverloaded and measures
nothing.`,
		Example: `  autoinfer sim overhead trials/examples/quickstart.yaml
  autoinfer sim overhead trials/examples/quickstart.yaml --trial 'quickstart/router.policy=cache_aware' -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runSimOverhead(c, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trial, "trial", "", "name of the spec's trial to measure (default: the first)")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json")
	fl.DurationVar(&f.maxScheduleDelay, "max-schedule-delay", 0, "overrides the spec's checks.max_schedule_delay_p99_ms for the real-time run")
	fl.Float64Var(&f.maxEngineLagRatio, "max-engine-lag-ratio", 0, "overrides the spec's checks.max_engine_lag_ratio for the real-time run")
	return cmd
}

func runSimOverhead(c *cobra.Command, spec string, f overheadFlags) error {
	if f.output != "table" && f.output != "json" {
		return usageErr("--output: want table or json, got %q", f.output)
	}
	if err := checkOverloadFlags(c, f.maxScheduleDelay, f.maxEngineLagRatio); err != nil {
		return err
	}
	ts, err := trials.Load(spec, targetkinds.All())
	if err != nil {
		return withCode(ExitUsage, err)
	}
	t, err := pickTrial(ts, f.trial)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "autoinfer-overhead-")
	if err != nil {
		return withCode(ExitInfra, err)
	}
	defer os.RemoveAll(dir)
	ctx := c.Context()
	led, err := ledger.Open(ctx, filepath.Join(dir, "overhead.db"))
	if err != nil {
		return withCode(ExitInfra, err)
	}
	defer led.Close()
	runner, err := adapter.New(adapter.Options{Ledger: led, WorkDir: dir,
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		ScheduleDelayLimit:  f.maxScheduleDelay,
		EngineLagRatioLimit: f.maxEngineLagRatio})
	if err != nil {
		return withCode(ExitInfra, err)
	}
	o, err := runner.MeasureOverhead(ctx, t, led)
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("measuring %s: %w", t.Name, err))
	}
	if f.output == "json" {
		return json.NewEncoder(c.OutOrStdout()).Encode(o)
	}
	w := c.OutOrStdout()
	if o.Steps > 0 {
		fmt.Fprintf(w, "real run, engine step lag (completion − planned end) over %d steps:\n", o.Steps)
		fmt.Fprintf(w, "  step lag  median %.3f ms  (p10 %.3f, p90 %.3f, mean %.3f)\n", o.StepLagP50Ms, o.StepLagP10Ms, o.StepLagP90Ms, o.StepLagMean)
		if o.Wakes > 0 {
			fmt.Fprintf(w, "  woken     median %.3f ms  (p10 %.3f, p90 %.3f, mean %.3f) over %d steps planned on waking from idle\n",
				o.WakeP50Ms, o.WakeP10Ms, o.WakeP90Ms, o.WakeMeanMs, o.Wakes)
			fmt.Fprintf(w, "            (completion − the waking submit − the step's time; of which planned − submitted median %.3f ms)\n", o.WakePlanP50Ms)
		} else {
			fmt.Fprintln(w, "  woken     none: no step was planned after an idle engine was woken by a request")
		}
	} else {
		fmt.Fprintln(w, "no step lag: the workers report no engine steps (only the sim target's in-process engines do)")
	}
	fmt.Fprintf(w, "%s: real − virtual (engine_lag_ms %.2f, engine_wake_ms %.2f) over %d requests\n", o.Trial, o.EngineLagMs, o.EngineWakeMs, o.Pairs)
	fmt.Fprintf(w, "  TTFT  median %+.3f ms  (p10 %+.3f, p90 %+.3f)\n", o.TTFTP50Ms, o.TTFTP10Ms, o.TTFTP90Ms)
	fmt.Fprintf(w, "  E2E   median %+.3f ms\n", o.E2EP50Ms)
	fmt.Fprintf(w, "  TPOT  median %+.4f ms\n", o.TPOTP50Ms)
	if o.Split > 0 {
		fmt.Fprintf(w, "real run, split by the engines' timings over %d requests:\n", o.Split)
		fmt.Fprintf(w, "  inbound   client send → queued at the engine    median %.3f ms  (p10 %.3f, p90 %.3f)\n", o.InboundP50Ms, o.InboundP10Ms, o.InboundP90Ms)
		fmt.Fprintf(w, "  outbound  first token emitted → at the client   median %.3f ms  (p10 %.3f, p90 %.3f)\n", o.OutboundP50Ms, o.OutboundP10Ms, o.OutboundP90Ms)
		fmt.Fprintf(w, "  engine    queued → first token, real − virtual  median %+.3f ms  (p10 %+.3f, p90 %+.3f)\n", o.EngineDiffP50Ms, o.EngineDiffP10Ms, o.EngineDiffP90Ms)
	} else {
		fmt.Fprintln(w, "no split: the workers report no engine timings (only the sim target's in-process engines do)")
	}
	fmt.Fprintf(w, "http_overhead_ms: %.2f   # put in the spec (clock: virtual) or pass --http-overhead-ms\n", o.HTTPOverheadMs)
	fmt.Fprintf(w, "http_inbound_ms: %.2f    # the part before the engine; or pass --http-inbound-ms\n", o.HTTPInboundMs)
	fmt.Fprintf(w, "engine_lag_ms: %.2f      # the engines' median step lag; or pass --engine-lag-ms\n", o.EngineLagMs)
	fmt.Fprintf(w, "engine_wake_ms: %.2f     # the median woken step's lateness; or pass --engine-wake-ms\n", o.EngineWakeMs)
	return nil
}

// pickTrial is the trial named name, or the first when name is empty.
func pickTrial(ts []trials.Trial, name string) (trials.Trial, error) {
	if name == "" {
		return ts[0], nil
	}
	var names []string
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return trials.Trial{}, usageErr("--trial %q: the spec has no such trial (it has %q)", name, names)
}
