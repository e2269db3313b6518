package report

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
)

// SweepCurves builds only the sweep curves of the selected rows (no
// distributions, no comparisons) and returns them with the rows they
// place, by id, for callers that draw them (`ledger pareto --sweep-plot`).
// When opt.SLO is unset, the SLO the rows' specs recorded is used if every
// ok row recorded the same one; otherwise the curves carry no SLO and mark
// no knee, as in Build.
func SweepCurves(ctx context.Context, src Source, sel Selection, opt Options) (Curves, map[int64]Row, error) {
	if err := sel.Validate(); err != nil {
		return Curves{}, nil, err
	}
	if err := opt.Validate(); err != nil {
		return Curves{}, nil, err
	}
	opt = opt.withDefaults()
	trials, _, err := sel.rows(ctx, src)
	if err != nil {
		return Curves{}, nil, err
	}
	rows := map[int64]Row{}
	var curveRows []curveRow
	var ok []ledger.Trial
	for _, t := range trials {
		if t.Status != ledger.StatusOK {
			continue // a failed or aborted run's figures are no evidence
		}
		row, err := rowOf(t)
		if err != nil {
			return Curves{}, nil, err
		}
		reqs, err := src.Requests(ctx, t.ID)
		if err != nil {
			return Curves{}, nil, err
		}
		row.Requests = len(reqs)
		rows[t.ID] = row
		curveRows = append(curveRows, curveRow{row: row, reqs: reqs})
		ok = append(ok, t)
	}
	opt, noSLO, err := withRecordedSLO(opt, ok)
	if err != nil {
		return Curves{}, nil, err
	}
	c := buildCurves(curveRows, opt.SLO, opt.SLOSource, opt.Attainment)
	c.NoSLO = noSLO
	return c, rows, nil
}

// withRecordedSLO fills in the SLO every ok row recorded from its spec
// when opt has none. Without one it says why: the rows' specs set none, or
// they set different ones (then no single goodput definition applies).
func withRecordedSLO(opt Options, ok []ledger.Trial) (Options, string, error) {
	if opt.SLO.Set() {
		return opt, "", nil
	}
	slo, why, err := recordedSLO(ok)
	if err != nil {
		return opt, "", err
	}
	if slo.Set() {
		opt.SLO, opt.SLOSource = slo, "the rows' spec"
	}
	return opt, why, nil
}

// recordedSLO is the slo section every row recorded; zero, with the
// reason, when the rows recorded none or not the same one.
func recordedSLO(ts []ledger.Trial) (metrics.SLO, string, error) {
	var common *metrics.SLO
	var commonID int64
	for _, t := range ts {
		var s struct {
			TTFTMs float64 `json:"ttft_ms"`
			TPOTMs float64 `json:"tpot_ms"`
			E2ELMs float64 `json:"e2el_ms"`
		}
		if len(t.SLO) > 0 {
			if err := json.Unmarshal(t.SLO, &s); err != nil {
				return metrics.SLO{}, "", fmt.Errorf("trial %d: decoding slo: %w", t.ID, err)
			}
		}
		slo := metrics.SLO{TTFTMs: s.TTFTMs, TPOTMs: s.TPOTMs, E2ELMs: s.E2ELMs}
		switch {
		case common == nil:
			common, commonID = &slo, t.ID
		case *common != slo:
			return metrics.SLO{}, fmt.Sprintf("the rows record different SLOs (rows %d and %d)", commonID, t.ID), nil
		}
	}
	if common == nil || !common.Set() {
		return metrics.SLO{}, "the rows' specs set no SLO", nil
	}
	return *common, "", nil
}
