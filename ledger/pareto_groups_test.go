package ledger

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestParetoReplicateGroups: minimise p99 TTFT, maximise throughput. A
// group competes as one point at its means with its intervals; a group
// dominated only by means is listed as not separable; a group with a
// failed replicate does not compete.
func testParetoReplicateGroups(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	fast := recordPoint(t, l, "fast", routerCA, 50, 600)
	far := recordPoint(t, l, "far", routerCA, 300, 500)
	wide := recordReplicates(t, l, "rg-wide", "wide", routerCA, []float64{90, 100, 110}, []float64{980, 1000, 1020})
	closeIDs := recordReplicates(t, l, "rg-close", "close", routerCA, []float64{115, 120, 125}, []float64{940, 950, 960})
	recordReplicates(t, l, "rg-failed", "failed", routerCA, []float64{10, 10, 10}, []float64{5000, 5000, 5000}, StatusOK, StatusOK, StatusFailed)

	q := ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput"}
	front, err := l.Pareto(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Point{}
	for _, p := range front.Points {
		byName[p.Name] = p
	}
	if got, want := names(front.Points), []string{"fast", "wide", "close"}; !slices.Equal(got, want) {
		t.Fatalf("points %v, want %v (front plus the not separable group)", got, want)
	}
	w, c := byName["wide"], byName["close"]
	if !w.OnFront || w.ID != wide[0] || w.X != 100 || w.Y != 1000 || w.Replicates != 3 || w.CI == nil ||
		w.CI.XLo >= 100 || w.CI.XHi <= 100 || w.CI.YLo >= 1000 {
		t.Errorf("group point %+v (ci %+v), want the means of rg-wide with intervals around them", w, w.CI)
	}
	if c.OnFront || c.ID != closeIDs[0] || !slices.Equal(c.NotSeparableFrom, []int64{wide[0]}) ||
		!slices.Equal(w.NotSeparableFrom, []int64{closeIDs[0]}) {
		t.Errorf("close %+v, wide %+v: want close off the front, not separable from wide and back", c, w)
	}
	if f := byName["fast"]; !f.OnFront || !f.Separable() || f.CI != nil || f.ID != fast {
		t.Errorf("single front row %+v", f)
	}

	q.AllPoints = true
	all, err := l.Pareto(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(all.Points), []string{"fast", "wide", "close", "far"}; !slices.Equal(got, want) {
		t.Errorf("all points %v, want %v (the failed group never competes)", got, want)
	}
	if p := all.Points[3]; p.ID != far || !p.Separable() || p.OnFront {
		t.Errorf("far %+v: separably dominated, off the front", p)
	}

	// A bound that one replicate misses excludes its group.
	q = ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput", Filter: Filter{Bounds: []Bound{{"p99_ttft_ms", "<", 105}}}}
	bounded, err := l.Pareto(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(bounded.Points), []string{"fast"}; !slices.Equal(got, want) {
		t.Errorf("under p99_ttft_ms < 105: %v, want %v", got, want)
	}
}

// TestDominatedByMatchesPairwise checks the sweep against the definition
// on random corners with many ties, in all four direction combinations.
func TestDominatedByMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, xd := range []Direction{Minimize, Maximize} {
		for _, yd := range []Direction{Minimize, Maximize} {
			for range 50 {
				targets, doms := make([]corner, rng.IntN(30)), make([]corner, rng.IntN(30))
				for _, s := range [][]corner{targets, doms} {
					for i := range s {
						s[i] = corner{float64(rng.IntN(8)), float64(rng.IntN(8))}
					}
				}
				got := dominatedBy(targets, doms, xd, yd)
				for i, tc := range targets {
					want := false
					for _, d := range doms {
						if !xd.Better(tc.x, d.x) && !yd.Better(tc.y, d.y) && (xd.Better(d.x, tc.x) || yd.Better(d.y, tc.y)) {
							want = true
						}
					}
					if got[i] != want {
						t.Fatalf("%v/%v: target %v dominated = %v, want %v (dominators %v)", xd, yd, tc, got[i], want, doms)
					}
				}
			}
		}
	}
}
