package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/adapter/hostmem"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

type trialRunFlags struct {
	ledger    string
	output    string
	asserts   []string
	baseline  string
	tolerance string
	workDir   string
	verbose   bool
	report    string
	// repeats overrides the spec's repeats when set (0: the spec's).
	repeats int
	// maxScheduleDelay, when set, overrides every spec's
	// checks.max_schedule_delay_p99_ms (the driver's p99 lateness above
	// which a trial fails as HostOverloaded); 0 keeps the spec's.
	maxScheduleDelay time.Duration
	// maxEngineLagRatio likewise overrides checks.max_engine_lag_ratio.
	maxEngineLagRatio float64
	// clock overrides every spec's clock when set ("real" or "virtual").
	clock          string
	httpOverheadMs float64
	httpInboundMs  float64
	engineLagMs    float64
	engineWakeMs   float64
	// recordDecisions is the file for the virtual-clock trials' routing
	// decisions (JSON lines); empty: none recorded.
	recordDecisions string
	// only names the trials of the spec to run (all when empty).
	only []string
}

func newTrialRunCmd() *cobra.Command {
	var f trialRunFlags
	cmd := &cobra.Command{
		Use:   "run SPEC",
		Short: "Run the trials of a spec and record each in the ledger",
		Long: `Runs every trial of SPEC (a matrix expands to one trial per combination, all
with the same seed, so they send byte-identical requests). For each trial:
provision workers, launch a fresh router (unless one replica without PD), warm
it, run the measured workload, gate quality against a reference replica,
scrape metrics, classify failures, write one ledger row, mark the rows it
invalidates stale, and tear everything down, also on error and on Ctrl-C.

With repeats: N in the spec (or --repeats N) each trial runs N times, with
seeds derived from its seed, as replicates of one trial: one row each,
sharing a replicate group id, never marking each other stale. The summary
gives each metric's mean and 95% Student t interval across the replicates;
if any replicate fails, the group's figures are withheld (n of N ok).

Exit status: 0 every trial passed; 1 a trial failed, or an assertion or the
baseline tolerance was violated; 2 the spec or flags are invalid; 3 the
infrastructure failed (workers, router, ledger); 130 interrupted.

--only NAME (repeatable) runs just the named trials of the spec (names as
trial validate lists them), recorded under the id of the spec's whole
sweep: a member the host refused (HostOverloaded) is measured again as
part of its sweep, and its siblings' rows stay current.`,
		Example: `  autoinfer trial run trials/examples/quickstart.yaml
  autoinfer trial run trials/examples/ci-smoke.yaml --assert 'p99_ttft_ms < 500'
  autoinfer trial run trials/examples/ci-smoke.yaml --baseline ci-smoke --tolerance 100%
  autoinfer trial run trials/examples/quickstart.yaml --repeats 5
  autoinfer trial run trials/examples/quickstart.yaml --clock virtual
  autoinfer trial run trials/examples/quickstart.yaml --only quickstart/router.policy=cache_aware`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runTrials(c, args[0], f) },
	}
	fl := cmd.Flags()
	addLedgerFlag(fl, &f.ledger, "ledger to record trials in (a file is created if missing)")
	fl.StringVarP(&f.output, "output", "o", "table", "summary format: table or json")
	fl.StringArrayVar(&f.asserts, "assert", nil, "extra check on every trial, e.g. 'p99_ttft_ms < 500' (repeatable)")
	fl.StringVar(&f.baseline, "baseline", "", "ledger row id or trial name to compare against (overrides the spec)")
	fl.StringVar(&f.tolerance, "tolerance", "", "how much worse than the baseline a metric may be, e.g. 10% (default: the spec's, else 10%)")
	fl.StringVar(&f.workDir, "work-dir", "", "directory for router configs and logs (default: a new temporary directory per trial)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log the lifecycle to stderr")
	fl.IntVar(&f.repeats, "repeats", 0, "run each trial N times as replicates with derived seeds (overrides the spec's repeats)")
	fl.StringVar(&f.clock, "clock", "", "run on this clock, overriding the specs': real, or virtual (a sim-target deployment simulated in one process, no HTTP; rows labelled virtual, see docs/whatif.md)")
	fl.Float64Var(&f.httpOverheadMs, "http-overhead-ms", 0, "on the virtual clock, add this many milliseconds to every request's TTFT and E2E (the real HTTP path's cost; measure it with 'autoinfer sim overhead SPEC'); overrides the specs' http_overhead_ms")
	fl.Float64Var(&f.httpInboundMs, "http-inbound-ms", 0, "on the virtual clock, the part of the HTTP overhead before the engine: a request reaches the router and its engine this many milliseconds after it was sent (at most --http-overhead-ms); overrides the specs' http_inbound_ms")
	fl.Float64Var(&f.engineLagMs, "engine-lag-ms", 0, "on the virtual clock, how late each simulated engine's loop runs in real time: a step's tokens are emitted this many milliseconds after its planned end (measure it with 'autoinfer sim overhead SPEC'); overrides the specs' engine_lag_ms")
	fl.Float64Var(&f.engineWakeMs, "engine-wake-ms", 0, "on the virtual clock, how many milliseconds after its planned end a step completes that an idle simulated engine planned when an arrival woke it (instead of --engine-lag-ms; measure it with 'autoinfer sim overhead SPEC'); overrides the specs' engine_wake_ms")
	fl.StringVar(&f.recordDecisions, "record-decisions", "", "write every routing decision of the (virtual-clock) trials to FILE as JSON lines: trial, request id, worker and rank, prefill worker and rank when PD, policy outcome (see docs/whatif.md)")
	fl.StringArrayVar(&f.only, "only", nil, "run only this trial of the spec, as a member of the spec's sweep (same sweep id; repeatable)")
	fl.StringVar(&f.report, "report", "", "also write an HTML report of the recorded rows to FILE (see 'ledger report')")
	fl.DurationVar(&f.maxScheduleDelay, "max-schedule-delay", 0,
		"p99 lateness of the driver's sends above which a trial fails as HostOverloaded (its figures would describe this machine, not the deployment); overrides the spec's checks.max_schedule_delay_p99_ms (default there: 100ms)")
	fl.Float64Var(&f.maxEngineLagRatio, "max-engine-lag-ratio", 0,
		"simulated engines' step lag over their modelled busy time above which a trial fails as HostOverloaded; overrides the spec's checks.max_engine_lag_ratio (default there: 0.5), and judges sim-target trials by the lag instead of their own virtual replay (docs/failures.md)")
	return cmd
}

// applyOverrides applies the flags that override the spec's trials
// (--repeats, --clock, the HTTP path and engine lateness figures) and
// keeps only the --only members; every error is a usage error.
func (f trialRunFlags) applyOverrides(c *cobra.Command, ts []trials.Trial) ([]trials.Trial, error) {
	if c.Flags().Changed("repeats") {
		if err := trials.SetRepeats(ts, f.repeats, "--repeats"); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	if c.Flags().Changed("clock") {
		if err := trials.SetClock(ts, f.clock, "--clock"); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	var overhead, inbound *float64
	if c.Flags().Changed("http-overhead-ms") {
		overhead = &f.httpOverheadMs
	}
	if c.Flags().Changed("http-inbound-ms") {
		inbound = &f.httpInboundMs
	}
	if overhead != nil || inbound != nil {
		if err := trials.SetHTTPPath(ts, overhead, inbound); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	if c.Flags().Changed("engine-lag-ms") {
		if err := trials.SetEngineLag(ts, f.engineLagMs); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	if c.Flags().Changed("engine-wake-ms") {
		if err := trials.SetEngineWake(ts, f.engineWakeMs); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	if c.Flags().Changed("only") {
		return onlyTrials(ts, f.only)
	}
	return ts, nil
}

func runTrials(c *cobra.Command, specPath string, f trialRunFlags) error {
	if f.output != "table" && f.output != "json" {
		return usageErr("--output: want table or json, got %q", f.output)
	}
	if err := checkOverloadFlags(c, f.maxScheduleDelay, f.maxEngineLagRatio); err != nil {
		return err
	}
	ts, err := trials.Load(specPath, targetkinds.All())
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if ts, err = f.applyOverrides(c, ts); err != nil {
		return err
	}
	extra, err := parseAsserts(f.asserts)
	if err != nil {
		return err
	}
	decisions, err := openDecisions(f.recordDecisions, ts)
	if err != nil {
		return err
	}
	defer decisions.discard()
	checks, err := newChecker(f.baseline, f.tolerance)
	if err != nil {
		return err
	}
	if err := checkTrialReport(f.report); err != nil {
		return err
	}
	if err := checkTrialMemory(c.ErrOrStderr(), ts, os.DirFS("/")); err != nil {
		return err
	}
	ctx := c.Context()
	led, err := ledger.Open(ctx, f.ledger)
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("opening ledger: %w", err))
	}
	defer led.Close()
	logLevel := slog.LevelWarn
	if f.verbose {
		logLevel = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: logLevel}))
	prog := newTrialProgress(c.ErrOrStderr())
	runner, err := adapter.New(adapter.Options{Ledger: led, WorkDir: f.workDir, Logger: log, Progress: prog.update,
		ScheduleDelayLimit: f.maxScheduleDelay, EngineLagRatioLimit: f.maxEngineLagRatio, Assertions: extra,
		Decisions: decisions.writer(), CalibrationProgress: c.ErrOrStderr()})
	if err != nil {
		return withCode(ExitInfra, err)
	}

	var (
		results, plain []trialResult
		sweeps         []adapter.SweepOutcome
		groups         []string
		skipped        []trials.Trial
	)
	worst := ExitOK
	runs := replicateRuns(ts)
	for i, t := range runs {
		if t.SameAs != "" {
			// The same measurement under another name: run once.
			prog.skip(i+1, len(runs), t)
			skipped = append(skipped, t)
			continue
		}
		base, err := checks.baselineFor(ctx, led, t)
		if err != nil {
			return withCode(ExitUsage, err)
		}
		var rs []trialResult
		if t.IsSweep() {
			if base.Row != nil {
				return usageErr("--baseline: %s is a sweep, one row per rate; compare its rows with `ledger compare`", t.Name)
			}
			var sw adapter.SweepOutcome
			sw, rs, err = runSweepTrial(ctx, runner, t, i+1, len(runs), prog)
			sweeps = append(sweeps, sw)
		} else {
			prog.start(i+1, len(runs), runLabel(t))
			started := time.Now()
			var out adapter.Outcome
			out, err = runner.RunAgainst(ctx, t, base)
			prog.finish()
			rs = []trialResult{{Outcome: out, Replicate: t.Replicate, Seed: t.Seed, Elapsed: time.Since(started)}}
			plain = append(plain, rs[0])
			if g := t.Replicate.Group; g != "" && (len(groups) == 0 || groups[len(groups)-1] != g) {
				groups = append(groups, g)
			}
		}
		results = append(results, rs...)
		if err != nil {
			if ctx.Err() != nil {
				_ = renderTrialResults(c.OutOrStdout(), f.output, results, groupResults(context.WithoutCancel(ctx), led, groups), nil, skipped, sweeps)
				var row int64
				if len(results) > 0 {
					row = results[len(results)-1].RowID
				}
				if row == 0 {
					// Say why, never claim a row that is not there.
					return withCode(ExitInterrupted, fmt.Errorf("interrupted: %w; no aborted row recorded: %w", context.Cause(ctx), err))
				}
				return withCode(ExitInterrupted, fmt.Errorf("interrupted: %w (aborted row %d recorded)", context.Cause(ctx), row))
			}
			return withCode(ExitInfra, err)
		}
		for _, r := range rs {
			worst = max(worst, r.exitCode())
		}
	}
	if err := decisions.commit(); err != nil {
		return err
	}
	grs := groupResults(ctx, led, groups)
	cmp := compareSweep(ctx, led, plain, grs)
	attachDrift(ctx, c.ErrOrStderr(), led, results)
	if err := renderTrialResults(c.OutOrStdout(), f.output, results, grs, cmp, skipped, sweeps); err != nil {
		return withCode(ExitInfra, err)
	}
	if err := writeTrialReport(ctx, led, led.Name(), f.report, ts, results); err != nil {
		return err
	}
	switch worst {
	case ExitOK:
		return nil
	case ExitInfra:
		return withCode(ExitInfra, errors.New("infrastructure failure: see the failure column"))
	}
	return withCode(ExitFailed, errors.New(failedSummary(results)))
}

// trialResult is one trial's outcome (with the checks it violated).
type trialResult struct {
	adapter.Outcome
	// Replicate places the run in its repeated trial (zero when run once).
	Replicate trials.Replicate `json:"replicate,omitzero"`
	Seed      int64            `json:"seed"`
	Elapsed   time.Duration    `json:"elapsed_ns"`
	// Drift is the prediction error over time of the profile that
	// predicted the trial (its own virtual replay), nil without one.
	Drift *ledger.Drift `json:"drift,omitempty"`
}

// exitCode: infrastructure failures (nothing could be measured) outrank
// failed trials, which outrank passes.
func (r trialResult) exitCode() int {
	if r.Failure != nil {
		switch r.Failure.Kind() {
		case failure.KindRouterStartupFailed, failure.KindWorkerStartupFailed:
			return ExitInfra
		}
		return ExitFailed
	}
	if r.Status != ledger.StatusOK {
		return ExitFailed
	}
	return ExitOK
}

func failedSummary(rs []trialResult) string {
	n := 0
	first := ""
	for _, r := range rs {
		if r.exitCode() == ExitOK {
			continue
		}
		n++
		if first == "" {
			switch {
			case r.Failure != nil:
				first = fmt.Sprintf("%s: %s: %s", r.Name, r.Failure.Kind(), r.Failure.Error())
			default:
				first = fmt.Sprintf("%s: %s", r.Name, r.Status)
			}
		}
	}
	msg := fmt.Sprintf("%d of %d trials failed; first: %s", n, len(rs), first)
	if hint := overloadHint(rs); hint != "" {
		msg += "\n" + hint
	}
	return msg
}

// checkTrialMemory refuses, before anything starts, a spec with a trial
// whose estimated memory exceeds what this machine has available (read
// from root: /proc/meminfo and the cgroup's limit). Where that cannot be
// read, it says so and lets the trials run.
func checkTrialMemory(stderr io.Writer, ts []trials.Trial, root fs.FS) error {
	limit, err := hostmem.Available(root)
	if err != nil {
		fmt.Fprintf(stderr, "warning: %v; trials are not checked against this machine's memory\n", err)
		return nil
	}
	if err := adapter.CheckMemory(ts, limit); err != nil {
		return withCode(ExitUsage, err)
	}
	return nil
}

// checkOverloadFlags checks --max-schedule-delay and --max-engine-lag-ratio
// when they were given.
func checkOverloadFlags(c *cobra.Command, delay time.Duration, lag float64) error {
	if c.Flags().Changed("max-schedule-delay") && delay <= 0 {
		return usageErr("--max-schedule-delay: must be > 0, got %v", delay)
	}
	if c.Flags().Changed("max-engine-lag-ratio") && !(lag > 0 && !math.IsInf(lag, 0)) {
		return usageErr("--max-engine-lag-ratio: must be a finite number > 0, got %v", lag)
	}
	return nil
}
