package ledger

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestPredictionPairs: a real row linked to a virtual one reads back as a
// pair with per-metric ratios; a link from a virtual row, or to a real or
// missing row, is refused; a failed measurement never agrees.
func testPredictionPairs(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	v := trial("cand", routerRR)
	v.Identity = virtualIdentity("fast")
	setMetrics(&v.Metrics, map[string]float64{"request_throughput": 10, "output_throughput": 100, "p99_ttft_ms": 50, "p50_ttft_ms": 20})
	pv, err := l.Record(ctx, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := trial("cand", routerRR)
	m.PredictedBy = &pv.ID
	setMetrics(&m.Metrics, map[string]float64{"request_throughput": 10.2, "output_throughput": 100, "p99_ttft_ms": 60, "p50_ttft_ms": 20})
	pm, err := l.Record(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Record(ctx, trial("plain", routerRR), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		by   int64
		virt bool
		want string
	}{
		{"to a real row", other.ID, false, "want a virtual"},
		{"to no row", 999, false, "no such trial"},
		{"from a virtual row", pv.ID, true, "only a real-time row"},
	} {
		bad := trial("bad", routerRR)
		if c.virt {
			bad.Identity = virtualIdentity("fast")
		}
		bad.PredictedBy = &c.by
		if _, err := l.Record(ctx, bad, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	ps, err := l.Predictions(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Measured.ID != pm.ID || ps[0].Predicted.ID != pv.ID {
		t.Fatalf("pairs %+v, want measured %d predicted by %d", ps, pm.ID, pv.ID)
	}
	got := map[string]MetricError{}
	errs := ps[0].Errors("p99_ttft_ms")
	for _, e := range errs {
		got[e.Metric] = e
	}
	if e := got["request_throughput"]; e.Ratio == nil || math.Abs(*e.Ratio-1.02) > 1e-9 || !e.Within {
		t.Errorf("request_throughput %+v, want ratio 1.02 within", e)
	}
	if e := got["p99_ttft_ms"]; e.Ratio == nil || math.Abs(*e.Ratio-1.2) > 1e-9 || e.Within {
		t.Errorf("p99_ttft_ms %+v, want ratio 1.2 not within", e)
	}
	if e := got["request_goodput"]; e.Ratio == nil || *e.Ratio != 1 || !e.Within {
		t.Errorf("request_goodput 0 vs 0: %+v, want ratio 1", e)
	}
	if len(errs) != len(PredictionMetrics()) {
		t.Errorf("%d metrics, want %d (the objective metric once)", len(errs), len(PredictionMetrics()))
	}
	if ps[0].Agrees(errs) {
		t.Error("a pair with p99 TTFT 20 % off agrees")
	}
	failed := ps[0]
	failed.Measured.Status, failed.Measured.Failure = StatusFailed, failureSample()
	if failed.Refused() == "" || failed.Agrees([]MetricError{{Within: true}}) {
		t.Errorf("a failed measurement: refused %q, agrees %v", failed.Refused(), failed.Agrees([]MetricError{{Within: true}}))
	}
	if e := NewMetricError("x", 0, 1); e.Ratio != nil || e.Within {
		t.Errorf("0 predicted, 1 measured: %+v, want no ratio, not within", e)
	}
}
