package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// searchFlags are search's flags; run is the command.
type searchFlags struct {
	ledgerPath, output, workDir, strategy string
	parallel, confirm                     int
	resume, verbose, onKubernetes         bool
	maxScheduleDelay                      time.Duration
	maxEngineLagRatio                     float64
}

// loadSearch reads a spec with a search: block: the spec without it, the
// block, and the space's candidates as virtual trials. Every error carries
// ExitUsage.
func loadSearch(path string) ([]byte, search.Spec, []trials.Trial, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, search.Spec{}, nil, withCode(ExitUsage, fmt.Errorf("reading spec: %w", err))
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	specData, s, err := search.Split(data, stem)
	if err != nil {
		return nil, search.Spec{}, nil, withCode(ExitUsage, fmt.Errorf("%s: %w", path, err))
	}
	ts, err := trials.Parse(specData, targetkinds.All())
	if err == nil {
		err = trials.SetClock(ts, trials.ClockVirtual, "search")
	}
	if err != nil {
		return nil, search.Spec{}, nil, withCode(ExitUsage, fmt.Errorf("%s: %w", path, err))
	}
	return specData, s, ts, nil
}

func newSearchCmd() *cobra.Command {
	var f searchFlags
	c := &cobra.Command{
		Use:   "search SPEC",
		Short: "Evaluate a space of deployments on the virtual clock and print the best (top-k, Pareto front)",
		Long: `Read a spec with a search: block, expand its space (spec keys to lists or
ranges, and linked variants) into candidates, keep those that use exactly the
GPU budget, run each on the virtual clock (in parallel across cores) and
record it as a virtual row of one search id (the sweep id). Then print the
feasible candidates (every SLO constraint met) ranked by the objective, or
the Pareto front of two objective metrics. Rows are predictions: see
docs/whatif.md for what the virtual clock does and does not model.

An interrupted search resumes with --resume: candidates with an ok row of
the search are not run again.

With --confirm K the top K feasible candidates (or K points spread along
the Pareto front) then run again in real time on the spec's target, with
the spec's whole request stream: each is an ordinary real-time row that
links to the virtual row that predicted it (predicted_by; ledger compare
--predicted lists the pairs). Per candidate and metric the output gives the
prediction, the measurement, their ratio and whether it is within 5 %. A
real-time trial the checks refuse (HostOverloaded, a failed assertion) is
shown as refused, never as agreement, and the exit status is then 1.`,
		Example: `  autoinfer search trials/examples/search.yaml
  autoinfer search trials/examples/search.yaml --resume --parallel 2
  autoinfer search trials/examples/search.yaml --resume --confirm 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return f.run(c, args[0]) },
	}
	fl := c.Flags()
	addLedgerFlag(fl, &f.ledgerPath, "ledger to record candidates in (a file is created if missing)")
	fl.IntVar(&f.parallel, "parallel", 0, "candidates run at once (0: one per core)")
	fl.BoolVar(&f.onKubernetes, "kubernetes", false, "run the candidates as an Indexed Job per round on the cluster the spec's search.kubernetes block names; the pods record rows in --ledger, which must be a postgres:// URL they reach")
	fl.BoolVar(&f.resume, "resume", false, "skip candidates the search already recorded ok")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log each candidate's lifecycle")
	fl.StringVar(&f.strategy, "strategy", "", "override search.strategy: grid (every candidate on the whole traffic; search.halving ignored) or halving (successive halving on shortened traffic)")
	fl.IntVar(&f.confirm, "confirm", 0, "then run the top K candidates (K points of a front) again in real time and pair each with its prediction")
	fl.StringVar(&f.workDir, "work-dir", "", "--confirm: directory for router configs and logs (default: a new temporary directory per trial)")
	fl.DurationVar(&f.maxScheduleDelay, "max-schedule-delay", 0, "--confirm: overrides the spec's checks.max_schedule_delay_p99_ms (as trial run's flag)")
	fl.Float64Var(&f.maxEngineLagRatio, "max-engine-lag-ratio", 0, "--confirm: overrides the spec's checks.max_engine_lag_ratio (as trial run's flag)")
	return c
}

// check refuses flag values out of range before anything runs.
func (f *searchFlags) check(c *cobra.Command) error {
	switch {
	case f.parallel < 0:
		return usageErr("--parallel: must be >= 0, got %d", f.parallel)
	case f.output != "table" && f.output != "json":
		return usageErr("--output %q: want table or json", f.output)
	case f.confirm < 0:
		return usageErr("--confirm: must be >= 0, got %d", f.confirm)
	case c.Flags().Changed("max-schedule-delay") && f.maxScheduleDelay <= 0:
		return usageErr("--max-schedule-delay: must be > 0, got %v", f.maxScheduleDelay)
	case c.Flags().Changed("max-engine-lag-ratio") && !(f.maxEngineLagRatio > 0 && !math.IsInf(f.maxEngineLagRatio, 0)):
		return usageErr("--max-engine-lag-ratio: must be a finite number > 0, got %v", f.maxEngineLagRatio)
	}
	return nil
}

// load reads the spec at path (loadSearch), applies --strategy and checks
// what --kubernetes needs.
func (f *searchFlags) load(c *cobra.Command, path string) ([]byte, search.Spec, []trials.Trial, error) {
	specData, s, ts, err := loadSearch(path)
	if err != nil {
		return nil, search.Spec{}, nil, err
	}
	if c.Flags().Changed("strategy") {
		s.Strategy = f.strategy
		if f.strategy != search.StrategyHalving {
			s.Halving = search.Halving{} // the spec's halving settings do not apply
		}
		if err := s.Validate(); err != nil {
			return nil, search.Spec{}, nil, usageErr("--strategy: %w", err)
		}
	}
	if f.onKubernetes {
		if err := checkKubernetes(s, f.ledgerPath); err != nil {
			return nil, search.Spec{}, nil, err
		}
	}
	return specData, s, ts, nil
}

func (f *searchFlags) run(c *cobra.Command, path string) error {
	if err := f.check(c); err != nil {
		return err
	}
	specData, s, ts, err := f.load(c, path)
	if err != nil {
		return err
	}
	ctx := c.Context()
	l, err := ledger.Open(ctx, f.ledgerPath)
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("opening ledger: %w", err))
	}
	defer l.Close()
	var remote search.Remote
	if f.onKubernetes {
		kr, err := startKubeRemote(ctx, s, specData, ts[0].SweepID, f.ledgerPath)
		if err != nil {
			return err
		}
		// Teardown always, interrupted or not, as the target's.
		defer func() {
			if err := kr.job.Close(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "autoinfer: tearing down namespace %s: %v (autoinfer target cleanup --kubernetes removes it)\n", kr.job.Namespace(), err)
			}
		}()
		remote = kr
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	errw := c.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: level}))
	started := time.Now()
	var rounds []search.Round
	run, over, err := search.Run(ctx, s, ts, search.Options{Ledger: l, Parallel: f.parallel, Resume: f.resume, Remote: remote,
		Round:  func(r search.Round) { rounds = append(rounds, r) },
		Logger: logger,
		Progress: func(done, total int, name string) {
			fmt.Fprintf(errw, "\r%d/%d candidates", done, total)
		}})
	fmt.Fprintln(errw)
	if err != nil {
		if ctx.Err() != nil {
			return withCode(ExitInterrupted, fmt.Errorf("search interrupted: %w (resume with --resume)", err))
		}
		return withCode(ExitInfra, err)
	}
	r := search.Rank(s, run)
	res := searchResult(ts[0].SweepID, run, over, r, time.Since(started))
	res.Strategy, res.Rounds = cmp.Or(s.Strategy, search.StrategyGrid), rounds
	if f.confirm == 0 {
		return renderSearch(c.OutOrStdout(), f.output, res, r)
	}
	if f.output == "table" {
		if err := renderSearch(c.OutOrStdout(), f.output, res, r); err != nil {
			return err
		}
	}
	return f.confirmBest(c, s, r, res, l, logger)
}

// confirmBest runs the --confirm picks in real time and pairs each with
// its prediction; a refused confirmation exits 1.
func (f *searchFlags) confirmBest(c *cobra.Command, s search.Spec, r search.Ranked, res searchJSON, l *ledger.Ledger, logger *slog.Logger) error {
	ctx, errw := c.Context(), c.ErrOrStderr()
	picks := search.Pick(r, f.confirm)
	cs, err := search.Confirm(ctx, s, picks, search.ConfirmOptions{Ledger: l, WorkDir: f.workDir,
		ScheduleDelayLimit: f.maxScheduleDelay, EngineLagRatioLimit: f.maxEngineLagRatio,
		Check:  func(ts []trials.Trial) error { return checkTrialMemory(errw, ts, os.DirFS("/")) },
		Logger: logger,
		Started: func(i, k int, name string) {
			fmt.Fprintf(errw, "confirming %d/%d in real time: %s\n", i, k, name)
		}})
	if err != nil {
		if ctx.Err() != nil {
			return withCode(ExitInterrupted, fmt.Errorf("confirmation interrupted: %w", err))
		}
		if code := exitCode(err); code != ExitInfra {
			return err // the memory check's usage error keeps its status
		}
		return withCode(ExitInfra, err)
	}
	res.Confirmed, res.ConfirmNote = confirmedRows(cs), search.Winner(s, r, cs)
	if err := renderConfirmed(c.OutOrStdout(), f.output, res, len(picks) < f.confirm); err != nil {
		return err
	}
	for _, c := range cs {
		if c.Pair.Refused() != "" {
			return withCode(ExitFailed, fmt.Errorf("a confirmation trial was refused (row %d: %s)", c.Pair.Measured.ID, c.Pair.Refused()))
		}
	}
	return nil
}

// searchJSON is search's machine-readable answer.
type searchJSON struct {
	SearchID   string         `json:"search_id"`
	Clock      string         `json:"clock"`
	Candidates int            `json:"candidates"`
	Resumed    int            `json:"resumed"`
	OverBudget int            `json:"over_budget"`
	Infeasible int            `json:"infeasible"`
	Failed     int            `json:"failed"`
	Objective  []string       `json:"objective"`
	Top        []searchRowOut `json:"top,omitempty"`
	Front      []searchRowOut `json:"front,omitempty"`
	ElapsedS   float64        `json:"elapsed_s"`
	// Confirmed are the --confirm pairs; ConfirmNote says when the
	// measurements reorder the predicted winner or front.
	Confirmed []confirmedOut `json:"confirmed,omitempty"`
	// Strategy is grid or halving; Rounds are halving's rounds (the
	// candidates counted above are the last round's, on the whole traffic).
	Strategy    string         `json:"strategy"`
	Rounds      []search.Round `json:"rounds,omitempty"`
	ConfirmNote string         `json:"confirm_note,omitempty"`
	cols        []string
}

type searchRowOut struct {
	Row      int64              `json:"row"`
	Name     string             `json:"name"`
	GPUs     int                `json:"gpus"`
	Settings string             `json:"settings"`
	Values   map[string]float64 `json:"values"`
}

// searchResult is the search's answer as printed.
func searchResult(id string, run, over []search.Candidate, r search.Ranked, elapsed time.Duration) searchJSON {
	resumed := 0
	for _, c := range run {
		if c.Resumed {
			resumed++
		}
	}
	var names []string
	for _, m := range r.Metrics {
		names = append(names, m.Name)
	}
	// The objective's metrics, then context the table always shows.
	cols := slices.Clone(names)
	for _, k := range []string{"request_throughput", "p99_ttft_ms", "p99_tpot_ms"} {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	out := func(cs []search.Candidate) []searchRowOut {
		var rows []searchRowOut
		for _, c := range cs {
			vals := map[string]float64{}
			for _, k := range cols {
				if v, ok := c.Values[k]; ok {
					vals[k] = v
				}
			}
			rows = append(rows, searchRowOut{Row: c.RowID, Name: c.Trial.Name, GPUs: c.GPUs, Settings: settingsOf(c.Trial), Values: vals})
		}
		return rows
	}
	return searchJSON{SearchID: id, Clock: trials.ClockVirtual, Candidates: len(run), Resumed: resumed, OverBudget: len(over),
		Infeasible: r.Infeasible, Failed: r.Failed, Objective: names, Top: out(r.Top), Front: out(r.Front), ElapsedS: elapsed.Seconds(), cols: cols}
}

func renderSearch(w io.Writer, format string, res searchJSON, r search.Ranked) error {
	names, cols := res.Objective, res.cols
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "search %s [virtual]: %d candidates run (%d resumed), %d outside the GPU budget, %d infeasible, %d failed, %.1f s\n",
		res.SearchID, res.Candidates, res.Resumed, res.OverBudget, r.Infeasible, r.Failed, res.ElapsedS)
	if len(res.Rounds) > 0 {
		fmt.Fprintf(w, "successive halving, %d rounds (only the last round's rows, on the whole traffic, are ranked):\n", len(res.Rounds))
		for _, rd := range res.Rounds {
			fmt.Fprintf(w, "  round %d: %d candidates on %.3g %% of the traffic (%d resumed), %d kept\n", rd.Index, rd.Candidates, rd.Fraction*100, rd.Resumed, rd.Kept)
		}
	}
	table := func(title string, rows []searchRowOut) {
		fmt.Fprintf(w, "\n%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "#\trow\tgpus\t%s\tsettings\n", strings.Join(cols, "\t"))
		for i, row := range rows {
			vals := make([]string, len(cols))
			for j, k := range cols {
				vals[j] = fmt.Sprintf("%.4g", row.Values[k])
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\n", i+1, row.Row, row.GPUs, strings.Join(vals, "\t"), row.Settings)
		}
		_ = tw.Flush()
	}
	if len(res.Top) > 0 {
		table(fmt.Sprintf("top %d by %s (%s):", len(res.Top), names[0], r.Metrics[0].Direction), res.Top)
	}
	if len(res.Front) > 0 {
		table(fmt.Sprintf("Pareto front of %s (%s) and %s (%s):", names[0], r.Metrics[0].Direction, names[1], r.Metrics[1].Direction), res.Front)
	}
	if len(res.Top)+len(res.Front) == 0 {
		fmt.Fprintln(w, "\nno feasible candidate: every one broke a constraint or failed")
	}
	return nil
}

// settingsOf is the variant and matrix values that made t.
func settingsOf(t trials.Trial) string {
	parts := make([]string, len(t.Settings))
	for i, s := range t.Settings {
		parts[i] = s.Path + "=" + s.Value
	}
	return strings.Join(parts, ",")
}
