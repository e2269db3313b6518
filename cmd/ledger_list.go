package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

// defaultListLimit is list's page without --all or --limit: the newest rows
// answer at once however large the ledger is.
const defaultListLimit = 50

func newLedgerListCmd(o *ledgerOpts) *cobra.Command {
	var ff ledgerFilterFlags
	var status string
	var limit int
	var all bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List trials, newest first (stale rows included, marked)",
		Long: `List trials, newest first, stale rows included and marked.

Shows the newest 50 rows unless --limit N or --all says otherwise; rows are
read and printed one at a time, so --all works on ledgers of any size.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			switch ledger.Status(status) {
			case "", ledger.StatusOK, ledger.StatusFailed, ledger.StatusAborted:
			default:
				return usageErr("--status %q: want ok, failed or aborted", status)
			}
			switch {
			case limit < 1:
				return usageErr("--limit %d: want 1 or more (--all lists every row)", limit)
			case all && c.Flags().Changed("limit"):
				return usageErr("--all and --limit: pass one")
			case all:
				limit = 0
			}
			f.Status, f.Limit, f.IncludeStale = ledger.Status(status), limit, true
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			n, err := ledgerListRows(c.Context(), c.OutOrStdout(), o.output, l, f)
			if err != nil {
				return err
			}
			if o.output == "table" && limit > 0 && n == limit {
				fmt.Fprintf(c.ErrOrStderr(), "(the newest %d rows; --limit N or --all for more)\n", limit)
			}
			return nil
		},
	}
	ff.register(c)
	c.Flags().StringVar(&status, "status", "", "only trials with this status: ok, failed, aborted")
	c.Flags().IntVar(&limit, "limit", defaultListLimit, "at most this many rows, newest first")
	c.Flags().BoolVar(&all, "all", false, "every matching row (streamed)")
	return c
}

// ledgerListRows streams the rows f selects: the short table, every column
// as csv (for spreadsheets), or whole rows as json. It returns the count.
func ledgerListRows(ctx context.Context, w io.Writer, format string, l *ledger.Ledger, f ledger.Filter) (int, error) {
	header := []string{"id", "name", "sweep_id", "status", "started_at", "target", "hardware", "topology", "policy",
		"p99_ttft_ms", "output_throughput", "prefix_cache_hit_rate", "failure_kind", "stale"}
	keys := ledgerJSONKeys(reflect.TypeFor[ledger.Trial]())
	if format == "csv" {
		header = keys
	}
	s, err := newRowStream(w, format, header)
	if err != nil {
		return 0, withCode(ExitInfra, err)
	}
	err = l.Each(ctx, f, func(t ledger.Trial) error {
		cells := []string{strconv.FormatInt(t.ID, 10), clockLabel(t.Name, t.Clock), t.SweepID, string(t.Status), t.StartedAt.Format(time.RFC3339),
			orDash(t.TargetKind), orDash(t.Hardware), ledgerTopology(t.Topology), ledgerPolicy(t.RouterConfig), ledgerNum(t.P99TTFTMs), ledgerNum(t.OutputThroughput),
			ledgerOptNum(t.PrefixCacheHitRate), string(t.FailureKind), strconv.FormatBool(t.Stale)}
		if format == "csv" {
			vals, err := ledgerFlatten(t, keys, "")
			if err != nil {
				return fmt.Errorf("rendering trial %d: %w", t.ID, err)
			}
			cells = vals
		}
		return s.add(cells, t)
	})
	if err == nil {
		err = s.close()
	}
	if err != nil {
		return s.n, withCode(ExitInfra, err)
	}
	return s.n, nil
}

func newLedgerShowCmd(o *ledgerOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show every column of one trial",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := ledgerParseID("ID", args[0])
			if err != nil {
				return err
			}
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			t, err := l.Get(c.Context(), id)
			if err != nil {
				return ledgerNotFound(err)
			}
			keys := ledgerJSONKeys(reflect.TypeFor[ledger.Trial]())
			vals, err := ledgerFlatten(t, keys, noValue)
			if err != nil {
				return withCode(ExitInfra, err)
			}
			tbl := ledgerTable{header: []string{"column", "value"}}
			for i, k := range keys {
				tbl.add(k, vals[i])
			}
			return ledgerRender(c.OutOrStdout(), o.output, tbl, t)
		},
	}
}

// ledgerTrialsTable has one column per JSON key of a trial.
func ledgerTrialsTable(trials []ledger.Trial) (ledgerTable, error) {
	keys := ledgerJSONKeys(reflect.TypeFor[ledger.Trial]())
	tbl := ledgerTable{header: keys}
	for _, t := range trials {
		vals, err := ledgerFlatten(t, keys, "")
		if err != nil {
			return tbl, fmt.Errorf("rendering trial %d: %w", t.ID, err)
		}
		tbl.add(vals...)
	}
	return tbl, nil
}

func ledgerTopology(t ledger.Topology) string {
	if t.Prefill > 0 || t.Decode > 0 {
		return fmt.Sprintf("%dP+%dD", t.Prefill, t.Decode)
	}
	return fmt.Sprintf("%d replica(s)", t.Replicas)
}

func ledgerPolicy(router ledger.JSON) string {
	var r struct {
		Policy string `json:"policy"`
		PD     bool   `json:"pd_disaggregation"`
		PP     string `json:"prefill_policy"`
		DP     string `json:"decode_policy"`
	}
	if len(router) == 0 || json.Unmarshal(router, &r) != nil {
		return "-"
	}
	if r.PD {
		return r.PP + "/" + r.DP
	}
	return r.Policy
}
