package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/report"
)

func newLedgerReportCmd(o *ledgerOpts) *cobra.Command {
	var html, title string
	var goodput, pairs []string
	var sel report.Selection
	var opt report.Options
	c := &cobra.Command{
		Use:   "report --html FILE [--sweep ID | --name NAME | ID...]",
		Short: "Write an HTML report: table, Pareto front, latency CDFs, sweep curves, comparisons",
		Long: `Write one self-contained HTML file (no network needed to view it) about a sweep,
the trials with a name, the given trial ids, or the newest --limit rows:

  - the rows as a sortable table, and each row's identity (target, hardware
    where recorded, topology, router, engine and workload settings);
  - the Pareto front of any two metrics, picked in the page (default
    p99_ttft_ms against output_throughput), points labelled, stale rows hollow;
  - TTFT, TPOT and E2EL distributions (CDFs) per trial from the requests table;
  - sweep curves: offered request rate against latency and goodput, the knee
    marked (the highest rate at which --attainment of the requests meet every
    --goodput bound; without --goodput, the SLO every selected row recorded
    from its spec, and when the rows recorded none or different ones the page
    says which and marks no knee);
  - the bootstrap comparison (as 'ledger compare') of two trials picked in the
    page: every pair of up to 12 ok trials, or the pairs given by --compare.`,
		Example: `  autoinfer ledger report --html report.html --sweep 3f2a9c1e --goodput ttft:100,tpot:20
  autoinfer ledger report --html two.html 12 13
  autoinfer ledger report --html q.html --name quickstart/router.policy=cache_aware`,
		RunE: func(c *cobra.Command, args []string) error {
			if html == "" {
				return usageErr("--html: required (the file to write)")
			}
			for i, a := range args {
				id, err := ledgerParseID(fmt.Sprintf("ID[%d]", i), a)
				if err != nil {
					return err
				}
				sel.IDs = append(sel.IDs, id)
			}
			slo, err := parseGoodput(goodput)
			if err != nil {
				return err
			}
			opt.SLO, opt.Title, opt.Ledger, opt.Generated = slo, title, ledger.Redact(o.path), time.Now()
			if slo.Set() {
				opt.SLOSource = "--goodput"
			}
			for i, p := range pairs {
				a, b, ok := strings.Cut(p, ",")
				ida, erra := ledgerParseID(fmt.Sprintf("--compare[%d]", i), a)
				idb, errb := ledgerParseID(fmt.Sprintf("--compare[%d]", i), b)
				if !ok || erra != nil || errb != nil {
					return usageErr("--compare[%d] %q: want A,B (two trial ids)", i, p)
				}
				opt.Pairs = append(opt.Pairs, [2]int64{ida, idb})
			}
			if err := errors.Join(sel.Validate(), opt.Validate(), checkReportPath(html)); err != nil {
				return usageErr("%w", err)
			}
			l, err := o.open(c.Context(), "table")
			if err != nil {
				return err
			}
			defer l.Close()
			r, err := writeReport(c.Context(), l, sel, opt, html)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s: %d trials, %d comparisons\n", html, len(r.Rows), len(r.Pairs))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&html, "html", "", "the HTML file to write (required)")
	f.StringVar(&sel.SweepID, "sweep", "", "report on this sweep's trials")
	f.StringVar(&sel.Name, "name", "", "report on the trials with this name")
	f.IntVar(&sel.Limit, "limit", report.DefaultLimit, "without --sweep, --name or ids: the newest this many rows")
	f.StringSliceVar(&goodput, "goodput", nil, "SLOs defining goodput and the knee, as ttft:MS, tpot:MS, e2el:MS")
	f.Float64Var(&opt.Attainment, "attainment", report.DefaultAttainment, "share of requests that must meet the SLOs for a rate to meet them")
	f.StringArrayVar(&pairs, "compare", nil, "A,B: trial ids to compare (repeatable; default every pair of up to 12 ok trials)")
	f.IntVar(&opt.Compare.Resamples, "resamples", 2000, "bootstrap resamples per comparison")
	f.Float64Var(&opt.Compare.Confidence, "confidence", 0.95, "confidence level of the intervals")
	f.Uint64Var(&opt.Compare.Seed, "seed", 1, "bootstrap seed (equal seeds, equal intervals)")
	f.StringVar(&title, "title", "", "page title (default: from the selection)")
	return c
}

// checkReportPath rejects a report path whose directory does not exist, so
// the check fails before any work.
func checkReportPath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("--html %s: directory %s does not exist", path, dir)
	}
	return nil
}

// writeReport builds the report and writes it in one piece: rendered in
// memory, written to a temporary file beside the target, then renamed, so
// a failure never leaves a half-written page.
func writeReport(ctx context.Context, l *ledger.Ledger, sel report.Selection, opt report.Options, path string) (report.Report, error) {
	r, err := report.Build(ctx, l, sel, opt)
	if errors.Is(err, report.ErrNotInReport) {
		return report.Report{}, usageErr("--%w", err)
	}
	if err != nil {
		return report.Report{}, ledgerNotFound(err)
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, r); err != nil {
		return report.Report{}, withCode(ExitInfra, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return report.Report{}, withCode(ExitInfra, fmt.Errorf("writing report: %w", err))
	}
	_, err = tmp.Write(buf.Bytes())
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return report.Report{}, withCode(ExitInfra, fmt.Errorf("writing report %s: %w", path, err))
	}
	return r, nil
}
