package cmd

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/calibrate"
)

// calibrateLedgerFlags are `autoinfer sim calibrate --from-ledger`'s flags
// beyond the shared --base, --profile-name and --profile-file.
type calibrateLedgerFlags struct {
	on             bool
	ledger, before string
	filter         ledgerFilterFlags
}

func addCalibrateLedgerFlags(cmd *cobra.Command, f *calibrateLedgerFlags) {
	cmd.Flags().BoolVar(&f.on, "from-ledger", false, "refit --base's step model from the ledger rows the filters select (their request records)")
	addLedgerFlag(cmd.Flags(), &f.ledger, "--from-ledger: the ledger to read")
	cmd.Flags().StringVar(&f.before, "before", "", "--from-ledger: the profile file in use so far (default: --base), whose held-out error the refit is compared with; of the same step-model form as --base")
	f.filter.register(cmd)
}

// runSimCalibrateLedger refits from the selected rows, holding every fifth
// out, prints each metric's held-out error before and after, and writes
// the refitted profile file (temp + rename).
func runSimCalibrateLedger(cmd *cobra.Command, f *calibrateLedgerFlags, obs *calibrateObserveFlags) error {
	if obs.profileFile == "" {
		return usageErr("--profile-file: required with --from-ledger (where the refitted profile goes)")
	}
	before, err := sim.LookupProfile(obs.base)
	if err != nil {
		return usageErr("--base: %w", err)
	}
	if f.before != "" {
		b, err := sim.ReadProfileFile(f.before)
		if err != nil {
			return usageErr("--before: %w", err)
		}
		if (b.Model == nil) != (before.Model == nil) {
			return usageErr("--before %s: a %s profile, --base %s is not", f.before, stepForm(b), obs.base)
		}
		before = b
	}
	filter, err := f.filter.filter()
	if err != nil {
		return err
	}
	o := &ledgerOpts{path: f.ledger, output: "table"}
	l, err := o.open(cmd.Context())
	if err != nil {
		return err
	}
	defer l.Close()
	trials, err := l.List(cmd.Context(), filter)
	if err != nil {
		return withCode(ExitInfra, err)
	}
	slices.SortFunc(trials, func(a, b ledger.Trial) int { return int(a.ID - b.ID) })
	var ids []int64
	var rows []calibrate.Observed
	for _, t := range trials {
		if t.Status != ledger.StatusOK {
			continue
		}
		reqs, err := l.Requests(cmd.Context(), t.ID)
		if err != nil {
			return withCode(ExitInfra, err)
		}
		if row := observedRow(t.ID, reqs); len(row.Requests) > 0 {
			ids, rows = append(ids, t.ID), append(rows, row)
		}
	}
	r, err := calibrate.RefitRows(before, sim.Options{}, ids, rows)
	if r == nil {
		return withCode(ExitFailed, fmt.Errorf("--from-ledger: %w", err))
	}
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("--from-ledger: the step model does not fit these rows: %w", err))
	}
	name := obs.name
	if name == "" {
		name = obs.base + "-refit"
	}
	file, err := calibrate.RefitFile(name, obs.base, ledger.Redact(f.ledger), r)
	if err != nil {
		return withCode(ExitInfra, err)
	}
	if err := writeFileAtomic(obs.profileFile, file); err != nil {
		return withCode(ExitInfra, fmt.Errorf("writing %s: %w", obs.profileFile, err))
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "rows fitted %v, held out %v\n%-12s %10s %10s\n", r.FitRows, r.HeldRows, "metric", "before", "after")
	for _, m := range slices.Sorted(maps.Keys(r.After)) {
		fmt.Fprintf(out, "%-12s %9.1f%% %9.1f%%\n", m, 100*r.Before[m], 100*r.After[m])
	}
	for _, c := range r.Fit.Coefficients {
		fmt.Fprintf(out, "%-28s %12.5g ± %.2g\n", c.Name, c.Value, c.StdErr)
	}
	fmt.Fprintf(out, "wrote %s\n", obs.profileFile)
	return nil
}

// stepForm names a profile's step-model form.
func stepForm(p sim.Profile) string {
	if p.Model == nil {
		return "linear"
	}
	return "calibrated"
}

// observedRow is one ledger row's completed requests as the probe would have seen
// them: each request's token times rebuilt from its send time, TTFT and
// inter-token latencies. Requests without one latency per token gap are
// left out.
func observedRow(id int64, reqs []ledger.Request) calibrate.Observed {
	o := calibrate.Observed{}
	for _, r := range reqs {
		if r.Status != ledger.RequestOK || r.OutputTokens < 1 || len(r.ITLs) != r.OutputTokens-1 {
			continue
		}
		q := calibrate.Request{Prompt: fmt.Sprintf("row %d request %d", id, r.Index), MaxTokens: r.OutputTokens,
			Sent: msDuration(r.ActualSendMs), PromptTokens: r.InputTokens, CachedTokens: r.CachedTokens}
		t := q.Sent + msDuration(r.TTFTMs)
		q.Tokens = append(q.Tokens, t)
		for _, itl := range r.ITLs {
			t += msDuration(itl)
			q.Tokens = append(q.Tokens, t)
		}
		o.Requests = append(o.Requests, q)
	}
	return o
}

// msDuration converts the ledger's float milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * 1e6) }
