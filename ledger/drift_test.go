package ledger

import (
	"slices"
	"testing"
	"time"
)

// Drifts: pairs group by the predicted profile's content hash, in the
// order the measurements finished; a metric whose median error over the
// recent pairs exceeds the profile's stated error (its calibration's
// held-out error, PredictionTolerance where it states none) is named, and
// old errors do not count once enough recent ones are in.
func TestDriftsNameTheMetricThatDrifted(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	pair := func(id int64, hash, provenance string, ttftRatio float64) Prediction {
		v := trial("p", routerRR)
		v.Identity = virtualIdentity("cal")
		v.HardwareConfig = JSON(`{"content_hash":"` + hash + `","provenance":"` + provenance + `"}`)
		setMetrics(&v.Metrics, map[string]float64{"output_throughput": 100, "p50_ttft_ms": 20, "p50_tpot_ms": 5})
		m := trial("p", routerRR)
		m.ID, m.FinishedAt = id, start.Add(time.Duration(id)*time.Hour)
		setMetrics(&m.Metrics, map[string]float64{"output_throughput": 101, "p50_ttft_ms": 20 * ttftRatio, "p50_tpot_ms": 5})
		return Prediction{Predicted: v, Measured: m}
	}
	const stated = "profile file: calibrated; stated error held-out error: throughput 2.0 %, ttft_p50 8.0 %, tpot_p50 1.0 %"
	var ps []Prediction
	// Profile a: right for the first six rows, then TTFT 20 % above its
	// prediction for the last five (given out of order).
	for id := int64(11); id >= 1; id-- {
		r := 1.02
		if id > 6 {
			r = 1.2
		}
		ps = append(ps, pair(id, "aaaa", stated, r))
	}
	// Profile b states nothing: PredictionTolerance; its TTFT is 4 % off.
	ps = append(ps, pair(20, "bbbb", "step model v3", 1.04))
	ds := Drifts(ps)
	if len(ds) != 2 {
		t.Fatalf("%d profiles, want 2: %+v", len(ds), ds)
	}
	a, b := ds[0], ds[1]
	if a.Profile != "aaaa" || !slices.IsSorted(a.Rows) || len(a.Rows) != 11 {
		t.Fatalf("profile a: %+v", a)
	}
	if !slices.Equal(a.Exceeded, []string{"p50_ttft_ms"}) || a.Bounds["p50_ttft_ms"] != 0.08 {
		t.Errorf("profile a exceeded %v (bounds %v, recent %v), want p50_ttft_ms over its stated 8 %%", a.Exceeded, a.Bounds, a.Recent)
	}
	if a.Bounds["p50_tpot_ms"] != PredictionTolerance {
		t.Errorf("a stated 1 %% bound reads as %v, want raised to PredictionTolerance", a.Bounds["p50_tpot_ms"])
	}
	if b.Profile != "bbbb" || len(b.Exceeded) != 0 {
		t.Errorf("profile b (4 %% off, no stated error): exceeded %v", b.Exceeded)
	}
	// Before the drift the recent rows were right: no drift is reported.
	if old := Drifts(ps[5:11]); len(old[0].Exceeded) != 0 {
		t.Errorf("rows 1-6 only: exceeded %v", old[0].Exceeded)
	}
}
