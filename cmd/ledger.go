package cmd

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// ledgerOpts are the flags every ledger subcommand shares.
type ledgerOpts struct {
	path   string
	output string
}

func newLedgerCmd() *cobra.Command {
	o := &ledgerOpts{}
	c := &cobra.Command{
		Use:   "ledger",
		Short: "Query the trial ledger: list, show, pareto, compare, export, report, migrate, push, pull",
		Long: `Query the ledger that trials write (one row per trial): a SQLite file,
or a team's PostgreSQL database (--ledger postgres://..., or $AUTOINFER_LEDGER).

Metric names are vllm bench serve's result keys (p99_ttft_ms, median_tpot_ms,
output_throughput, request_goodput, ...) plus autoinfer's own
(p99_schedule_delay_ms, achieved_request_rate, prefix_cache_hit_rate, ...).
The schema is documented in docs/ledger.md for direct sqlite3 or psql queries.`,
	}
	addLedgerFlag(c.PersistentFlags(), &o.path, "ledger")
	c.PersistentFlags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	c.AddCommand(newLedgerListCmd(o), newLedgerShowCmd(o), newLedgerParetoCmd(o), newLedgerCompareCmd(o), newLedgerExportCmd(o),
		newLedgerMigrateCmd(o), newLedgerReportCmd(o), newLedgerPushCmd(o), newLedgerPullCmd(o))
	return c
}

// open checks the output format and opens an existing ledger: a read
// command never creates an empty file.
func (o *ledgerOpts) open(ctx context.Context, formats ...string) (*ledger.Ledger, error) {
	if len(formats) == 0 {
		formats = []string{"table", "json", "csv"}
	}
	if !slices.Contains(formats, o.output) {
		return nil, usageErr("--output %q: want %s", o.output, strings.Join(formats, ", "))
	}
	l, err := ledger.OpenReadOnly(ctx, o.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageErr("--ledger %s: no such ledger (run a trial first, or pass --ledger PATH or URL): %v", ledger.Redact(o.path), err)
	}
	if errors.Is(err, ledger.ErrNotLedger) {
		return nil, usageErr("--ledger %s: %v", ledger.Redact(o.path), err)
	}
	if err != nil {
		return nil, withCode(ExitInfra, err)
	}
	return l, nil
}

// ledgerFilterFlags are the row filters list and pareto share.
type ledgerFilterFlags struct {
	name, sweep string
	where       []string
	bounds      []string
	virtual     bool
}

func (f *ledgerFilterFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.name, "name", "", "only trials with this name")
	c.Flags().StringVar(&f.sweep, "sweep", "", "only trials of this sweep id")
	c.Flags().StringArrayVar(&f.where, "where", nil,
		"KEY=VALUE equality filter, repeatable; keys: "+strings.Join(ledger.WhereKeys(), ", "))
	c.Flags().StringArrayVar(&f.bounds, "bound", nil,
		"metric condition rows must meet, repeatable, e.g. 'p99_ttft_ms < 500'")
	c.Flags().BoolVar(&f.virtual, "include-virtual", false,
		"also rows measured on the virtual clock (predictions, labelled virtual); --where clock=virtual selects only those")
}

func (f *ledgerFilterFlags) filter() (ledger.Filter, error) {
	out := ledger.Filter{Name: f.name, SweepID: f.sweep, IncludeVirtual: f.virtual}
	for _, w := range f.where {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return out, usageErr("--where %q: want KEY=VALUE", w)
		}
		if !slices.Contains(ledger.WhereKeys(), k) {
			return out, usageErr("--where %q: unknown key %q (valid: %s)", w, k, strings.Join(ledger.WhereKeys(), ", "))
		}
		if out.Where == nil {
			out.Where = map[string]string{}
		}
		out.Where[k] = v
	}
	for i, expr := range f.bounds {
		a, err := trials.ParseAssertion(expr)
		if err != nil {
			return out, usageErr("--bound[%d]: %v", i, err)
		}
		if _, err := ledger.LookupMetric(a.Metric); err != nil {
			return out, usageErr("--bound[%d]: %v", i, err)
		}
		out.Bounds = append(out.Bounds, ledger.Bound{Metric: a.Metric, Op: a.Op, Value: a.Value})
	}
	return out, nil
}

// ledgerNotFound turns a missing trial or reference into bad input.
func ledgerNotFound(err error) error {
	if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrIncompleteGroup) {
		return withCode(ExitUsage, err)
	}
	return withCode(ExitInfra, err)
}

func ledgerParseID(flag, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErr("%s %q: want a trial id (a positive integer)", flag, s)
	}
	return id, nil
}
