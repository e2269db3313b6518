package cmd

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

func newLedgerListCmd(o *ledgerOpts) *cobra.Command {
	var ff ledgerFilterFlags
	var status string
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "List trials, newest first (stale rows included, marked)",
		Args:  cobra.NoArgs,
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
			if limit < 0 {
				return usageErr("--limit %d: want 0 (no limit) or more", limit)
			}
			f.Status, f.Limit, f.IncludeStale = ledger.Status(status), limit, true
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			trials, err := l.List(c.Context(), f)
			if err != nil {
				return withCode(ExitInfra, err)
			}
			tbl := ledgerTable{header: []string{"id", "name", "sweep_id", "status", "started_at", "topology", "policy",
				"p99_ttft_ms", "output_throughput", "failure_kind", "stale"}}
			for _, t := range trials {
				tbl.add(strconv.FormatInt(t.ID, 10), t.Name, t.SweepID, string(t.Status), t.StartedAt.Format(time.RFC3339),
					ledgerTopology(t.Topology), ledgerPolicy(t.RouterConfig), ledgerNum(t.P99TTFTMs), ledgerNum(t.OutputThroughput),
					string(t.FailureKind), strconv.FormatBool(t.Stale))
			}
			if o.output == "csv" {
				// CSV carries every column, for spreadsheets.
				tbl, err := ledgerTrialsTable(trials)
				if err != nil {
					return withCode(ExitInfra, err)
				}
				return ledgerRender(c.OutOrStdout(), "csv", tbl, nil)
			}
			if trials == nil {
				trials = []ledger.Trial{}
			}
			return ledgerRender(c.OutOrStdout(), o.output, tbl, trials)
		},
	}
	ff.register(c)
	c.Flags().StringVar(&status, "status", "", "only trials with this status: ok, failed, aborted")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many rows (0: all)")
	return c
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
			vals, err := ledgerFlatten(t, keys)
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
		vals, err := ledgerFlatten(t, keys)
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
