package ledger

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestMeanCIStudentT(t *testing.T) {
	cases := []struct {
		xs             []float64
		mean, half     float64
		wantN          int
		describeSample string
	}{
		// t(0.975, 2) = 4.302652729911275, sd 1: half = t/√3.
		{[]float64{1, 2, 3}, 2, 4.302652729911275 / math.Sqrt(3), 3, "three replicates"},
		// t(0.975, 1) = 12.706204736174705, sd √2: half = t·√2/√2.
		{[]float64{10, 12}, 11, 12.706204736174705, 2, "two replicates"},
		{[]float64{7}, 7, 0, 1, "one replicate: no interval"},
		{[]float64{5, 5, 5}, 5, 0, 3, "equal replicates"},
	}
	for _, c := range cases {
		e := MeanCI(c.xs, 0.95)
		if math.Abs(e.Mean-c.mean) > 1e-9 || math.Abs(e.HalfWidth()-c.half) > 1e-6 || e.N != c.wantN ||
			math.Abs(e.Lo-(c.mean-c.half)) > 1e-6 {
			t.Errorf("%s: %+v, want mean %g ± %g (n %d)", c.describeSample, e, c.mean, c.half, c.wantN)
		}
	}
}

// recordReplicates writes one replicate group: a row per value of x
// (p99_ttft_ms) and y (output_throughput); status[i] != ok fails replicate i.
func recordReplicates(t testing.TB, l *Ledger, group, name, router string, xs, ys []float64, status ...Status) []int64 {
	t.Helper()
	var ids []int64
	for i := range xs {
		tr := trial(name, router)
		tr.Seed = int64(i + 1)
		tr.WorkloadHash = "w-seed-" + string(rune('a'+i))
		tr.Replicate = Replicate{ReplicateGroup: group, ReplicateIndex: i, Replicates: len(xs)}
		tr.P99TTFTMs, tr.OutputThroughput = xs[i], ys[i]
		if i < len(status) && status[i] != StatusOK {
			tr.Status, tr.Failure = status[i], failureSample()
		}
		rec, err := l.Record(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.MarkedStale) > 0 {
			t.Fatalf("replicate %d of %s marked %v stale", i, group, rec.MarkedStale)
		}
		ids = append(ids, rec.ID)
	}
	return ids
}

func testReplicateGroupResult(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	ids := recordReplicates(t, l, "rg-ok", "a", routerRR, []float64{100, 110, 120}, []float64{900, 950, 1000})
	g, err := l.ReplicateGroup(ctx, "rg-ok")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := g.Metric("p99_ttft_ms")
	if !g.Complete() || g.OK != 3 || g.Replicates != 3 || len(g.IDs) != 3 || g.IDs[0] != ids[0] || !ok ||
		e.Mean != 110 || math.Abs(e.HalfWidth()-4.302652729911275*10/math.Sqrt(3)) > 1e-6 {
		t.Errorf("complete group: %+v, p99_ttft_ms %+v", g, e)
	}
	if e, _ := g.Metric("output_throughput"); e.Mean != 950 || e.N != 3 {
		t.Errorf("output_throughput estimate %+v, want mean 950 over 3", e)
	}

	recordReplicates(t, l, "rg-failed", "a", routerRR, []float64{100, 110, 120}, []float64{900, 950, 1000}, StatusOK, StatusFailed)
	g, err = l.ReplicateGroup(ctx, "rg-failed")
	if err != nil {
		t.Fatal(err)
	}
	if g.Complete() || g.OK != 2 || g.Metrics != nil || !strings.Contains(g.Missing, "2 of 3 replicates ok") ||
		!strings.Contains(g.Missing, "replicate 1") || !strings.Contains(g.Missing, string(failureSample().Kind())) {
		t.Errorf("group with a failed replicate: %+v", g)
	}

	// Interrupted after two of three: the third was never recorded.
	for i := range 2 {
		tr := trial("a", routerRR)
		tr.Replicate = Replicate{ReplicateGroup: "rg-short", ReplicateIndex: i, Replicates: 3}
		if _, err := l.Record(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	if g, _ := l.ReplicateGroup(ctx, "rg-short"); g.Complete() || !strings.Contains(g.Missing, "2 of 3 replicates recorded") {
		t.Errorf("short group: %+v", g)
	}
	if _, err := l.ReplicateGroup(ctx, "rg-none"); err == nil {
		t.Error("an unknown group resolved")
	}
}

func testRecordChecksReplicateFields(t *testing.T, be backend) {
	l, _ := be.open(t)
	for _, r := range []Replicate{{ReplicateGroup: "g", Replicates: 1}, {ReplicateGroup: "g", ReplicateIndex: 3, Replicates: 3},
		{ReplicateIndex: 1, Replicates: 3}, {ReplicateGroup: "g", ReplicateIndex: -1, Replicates: 2}} {
		tr := trial("bad", routerRR)
		tr.Replicate = r
		if _, err := l.Record(context.Background(), tr, nil); err == nil || !strings.Contains(err.Error(), "replicate_group") {
			t.Errorf("%+v: error %v, want one naming the replicate fields", r, err)
		}
	}
}

// testReplicatesNeverMarkEachOtherStale records replicates of one group
// under one comparison context with differing router configs (which
// would mark rows of separate runs stale), then a row of another run.
func testReplicatesNeverMarkEachOtherStale(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	for i, router := range []string{routerRR, routerCA} {
		tr := trial("a", router)
		tr.Replicate = Replicate{ReplicateGroup: "rg-1", ReplicateIndex: i, Replicates: 2}
		rec, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.MarkedStale) != 0 {
			t.Errorf("replicate %d marked %v stale", i, rec.MarkedStale)
		}
	}
	rec, err := l.Record(ctx, trial("b", routerRR), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.MarkedStale) != 1 {
		t.Errorf("a row outside the group marked %v, want the cache_aware replicate", rec.MarkedStale)
	}
}

func testCompareReplicateGroups(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	recordReplicates(t, l, "rg-a", "a", routerRR, []float64{100, 110, 120}, []float64{900, 950, 1000})
	recordReplicates(t, l, "rg-b", "b", routerRR, []float64{200, 210, 220}, []float64{1000, 1010, 1020})
	recordReplicates(t, l, "rg-c", "c", routerRR, []float64{105, 115, 125}, []float64{500, 510, 520})
	recordReplicates(t, l, "rg-bad", "bad", routerRR, []float64{1, 1}, []float64{1, 1}, StatusOK, StatusFailed)
	delta := func(c Comparison, metric string) MetricDelta {
		for _, d := range c.Metrics {
			if d.Metric == metric {
				return d
			}
		}
		t.Fatalf("no %s in the comparison", metric)
		return MetricDelta{}
	}
	c, err := l.Compare(ctx, "rg-a", "b", CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.A.Resolved != "group" || c.B.Resolved != "name" || len(c.A.IDs) != 3 || len(c.B.IDs) != 3 || c.B.Group == nil {
		t.Errorf("sides %+v / %+v: want both resolved to their three replicates", c.A, c.B)
	}
	d := delta(c, "p99_ttft_ms")
	if d.A == nil || d.B == nil || *d.A != 110 || *d.B != 210 || d.ACI == nil || d.BCI == nil || d.ACI.Mean != 110 || d.NotSeparable || d.Better != "A" {
		t.Errorf("separated groups: %+v", d)
	}
	if d := delta(c, "output_throughput"); !d.NotSeparable || d.Better != "" {
		t.Errorf("overlapping throughput intervals (950±124 vs 1010±25): %+v, want not separable", d)
	}
	c, err = l.Compare(ctx, "rg-a", "rg-c", CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := delta(c, "p99_ttft_ms"); !d.NotSeparable || d.Better != "" {
		t.Errorf("overlapping groups: %+v, want not separable", d)
	}
	if d := delta(c, "output_throughput"); d.NotSeparable || d.Better != "A" {
		t.Errorf("separated throughput: %+v", d)
	}
	for _, ref := range []string{"rg-bad", "bad"} {
		// By name: the latest ok "bad" is replicate 0 of the incomplete group.
		if _, err := l.Compare(ctx, ref, "rg-a", CompareOptions{}); !errors.Is(err, ErrIncompleteGroup) {
			t.Errorf("compare %s: %v, want ErrIncompleteGroup", ref, err)
		}
	}
}
