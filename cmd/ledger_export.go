package cmd

import (
	"reflect"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
)

func newLedgerExportCmd(o *ledgerOpts) *cobra.Command {
	var ff ledgerFilterFlags
	var withRequests, includeStale bool
	var format string
	c := &cobra.Command{
		Use:   "export [ID...]",
		Short: "Export rows (and per-request records) as JSON or CSV, or one trial as vllm bench serve JSON",
		Long: `Export the given trials, or every row the filters select (stale rows only with
--include-stale), as JSON (the default for export) or CSV.

--requests adds the per-request records: nested under each trial in JSON; in
CSV the output is the request records instead, one line each with trial_id.

--format vllm writes one trial as the JSON vllm bench serve --save-result
writes (with --requests, the per-request arrays of --save-detailed too).`,
		Example: `  autoinfer ledger export --sweep s1 -o csv > s1.csv
  autoinfer ledger export --format vllm --requests 12 > trial12.json`,
		RunE: func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("output") {
				o.output = "json"
			}
			var ids []int64
			for _, a := range args {
				id, err := ledgerParseID("ID", a)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			switch format {
			case "rows":
			case "vllm":
				if len(ids) != 1 {
					return usageErr("--format vllm: want exactly one trial ID (got %d)", len(ids))
				}
				if o.output != "json" {
					return usageErr("--format vllm: writes JSON only (got --output %s)", o.output)
				}
			default:
				return usageErr("--format %q: want rows or vllm", format)
			}
			f, err := ff.filter()
			if err != nil {
				return err
			}
			f.IncludeStale = includeStale
			l, err := o.open(c.Context(), "json", "csv")
			if err != nil {
				return err
			}
			defer l.Close()
			trials, err := ledgerExportRows(c, l, ids, f)
			if err != nil {
				return err
			}
			if format == "vllm" {
				var reqs []ledger.Request
				if withRequests {
					if reqs, err = l.Requests(c.Context(), trials[0].ID); err != nil {
						return withCode(ExitInfra, err)
					}
				}
				return ledgerRender(c.OutOrStdout(), "json", ledgerTable{}, ledger.VLLMResult(trials[0], reqs))
			}
			return ledgerExport(c, l, o.output, trials, withRequests)
		},
	}
	ff.register(c)
	c.Flags().BoolVar(&withRequests, "requests", false, "include per-request records")
	c.Flags().BoolVar(&includeStale, "include-stale", false, "include stale rows when selecting by filter")
	c.Flags().StringVar(&format, "format", "rows", "rows (ledger rows) or vllm (vllm bench serve result JSON)")
	return c
}

func ledgerExportRows(c *cobra.Command, l *ledger.Ledger, ids []int64, f ledger.Filter) ([]ledger.Trial, error) {
	if len(ids) == 0 {
		trials, err := l.List(c.Context(), f)
		if err != nil {
			return nil, withCode(ExitInfra, err)
		}
		return trials, nil
	}
	var out []ledger.Trial
	for _, id := range ids {
		t, err := l.Get(c.Context(), id)
		if err != nil {
			return nil, ledgerNotFound(err)
		}
		out = append(out, t)
	}
	return out, nil
}

func ledgerExport(c *cobra.Command, l *ledger.Ledger, output string, trials []ledger.Trial, withRequests bool) error {
	w := c.OutOrStdout()
	if !withRequests {
		if output == "csv" {
			tbl, err := ledgerTrialsTable(trials)
			if err != nil {
				return withCode(ExitInfra, err)
			}
			return ledgerRender(w, "csv", tbl, nil)
		}
		if trials == nil {
			trials = []ledger.Trial{}
		}
		return ledgerRender(w, "json", ledgerTable{}, trials)
	}
	type withReqs struct {
		ledger.Trial
		Requests []ledger.Request `json:"requests"`
	}
	keys := ledgerJSONKeys(reflect.TypeFor[ledger.Request]())
	tbl := ledgerTable{header: append([]string{"trial_id"}, keys...)}
	out := []withReqs{}
	for _, t := range trials {
		reqs, err := l.Requests(c.Context(), t.ID)
		if err != nil {
			return withCode(ExitInfra, err)
		}
		out = append(out, withReqs{Trial: t, Requests: reqs})
		for _, r := range reqs {
			vals, err := ledgerFlatten(r, keys, "")
			if err != nil {
				return withCode(ExitInfra, err)
			}
			tbl.add(append([]string{strconv.FormatInt(t.ID, 10)}, vals...)...)
		}
	}
	return ledgerRender(w, output, tbl, out)
}
