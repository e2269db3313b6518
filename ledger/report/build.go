package report

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// Source is what Build reads; *ledger.Ledger implements it.
type Source interface {
	Get(ctx context.Context, id int64) (ledger.Trial, error)
	List(ctx context.Context, f ledger.Filter) ([]ledger.Trial, error)
	Requests(ctx context.Context, id int64) ([]ledger.Request, error)
	Compare(ctx context.Context, refA, refB string, opt ledger.CompareOptions) (ledger.Comparison, error)
}

var _ Source = (*ledger.Ledger)(nil)

// Build reads the selected rows, their requests and the comparisons into a
// Report. A selection that matches no row is an error wrapping
// ledger.ErrNotFound.
func Build(ctx context.Context, src Source, sel Selection, opt Options) (Report, error) {
	if err := sel.Validate(); err != nil {
		return Report{}, err
	}
	if err := opt.Validate(); err != nil {
		return Report{}, err
	}
	opt = opt.withDefaults()
	trials, note, err := sel.rows(ctx, src)
	if err != nil {
		return Report{}, err
	}
	r := Report{
		Title: opt.Title, Ledger: opt.Ledger, Selection: sel.String(), Notes: []string{},
		DefaultX: "p99_ttft_ms", DefaultY: "output_throughput",
		Rows: make([]Row, 0, len(trials)), CDFs: []TrialCDF{},
		Bootstrap: BootstrapInfo{Resamples: opt.Compare.Resamples, Confidence: opt.Compare.Confidence, Seed: opt.Compare.Seed},
	}
	if r.Title == "" {
		r.Title = "autoinfer report: " + commonBase(trials, r.Selection)
	}
	if !opt.Generated.IsZero() {
		r.Generated = opt.Generated.UTC().Format(time.RFC3339)
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	for _, m := range ledger.MetricList() {
		r.Metrics = append(r.Metrics, MetricInfo{Name: m.Name, Direction: m.Direction.String()})
	}
	var curveRows []curveRow
	var ok []ledger.Trial
	for _, t := range trials {
		row, err := rowOf(t)
		if err != nil {
			return Report{}, err
		}
		reqs, err := src.Requests(ctx, t.ID)
		if err != nil {
			return Report{}, err
		}
		row.Requests = len(reqs)
		r.Rows = append(r.Rows, row)
		if t.Status != ledger.StatusOK {
			continue // a failed or aborted run's figures are no evidence
		}
		if len(reqs) > 0 {
			r.CDFs = append(r.CDFs, cdfOf(t.ID, reqs, opt.CDFPoints))
		}
		curveRows = append(curveRows, curveRow{row: row, reqs: reqs})
		ok = append(ok, t)
		if rr, has, err := routeRowOf(t, reqs); err != nil {
			return Report{}, err
		} else if has {
			r.Routes = append(r.Routes, rr)
		}
	}
	markVaries(r.Rows)
	opt, noSLO, err := withRecordedSLO(opt, ok)
	if err != nil {
		return Report{}, err
	}
	r.Curves = buildCurves(curveRows, opt.SLO, opt.SLOSource, opt.Attainment)
	r.Curves.NoSLO = noSLO
	pairs, pairsNote, err := pairsFor(r.Rows, opt.Pairs, opt.MaxPairs)
	if err != nil {
		return Report{}, err
	}
	r.PairsNote = pairsNote
	if r.Pairs, err = comparePairs(ctx, src, pairs, opt.Compare); err != nil {
		return Report{}, err
	}
	var predicted []ledger.Prediction
	if r.Predictions, predicted, err = predictionsOf(ctx, src, trials); err != nil {
		return Report{}, err
	}
	r.Drift = ledger.Drifts(predicted)
	return r, nil
}

// rowOf copies a trial's status, metrics and identity. A metric that is
// not finite is an error: no row should hold one, and the page would have
// to print a number it does not have.
func rowOf(t ledger.Trial) (Row, error) {
	id, err := identityOf(t)
	if err != nil {
		return Row{}, err
	}
	row := Row{
		ID: t.ID, Name: t.Name, SweepID: t.SweepID, Status: string(t.Status),
		Stale: t.Stale, StaleReason: t.StaleReason, FailureKind: string(t.FailureKind),
		StartedAt: t.StartedAt.UTC().Format(time.RFC3339), Metrics: map[string]float64{}, Identity: id,
	}
	if t.Failure != nil {
		row.Failure = t.Failure.Error()
	}
	for _, m := range ledger.MetricList() {
		v, ok := t.Value(m.Name)
		if !ok {
			continue // a NULL figure: the page shows "–"
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Row{}, fmt.Errorf("trial %d: %s is %g", t.ID, m.Name, v)
		}
		row.Metrics[m.Name] = v
	}
	return row, nil
}

// commonBase is the name all rows share before their matrix settings
// ("quickstart" for "quickstart/router.policy=…"), else fallback.
func commonBase(ts []ledger.Trial, fallback string) string {
	base, _, _ := strings.Cut(ts[0].Name, "/")
	for _, t := range ts[1:] {
		if b, _, _ := strings.Cut(t.Name, "/"); b != base {
			return fallback
		}
	}
	return base
}
