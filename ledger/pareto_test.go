package ledger

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// recordPoint writes an ok row with p99_ttft_ms = x and output_throughput = y.
func recordPoint(t testing.TB, l *Ledger, name, router string, x, y float64) int64 {
	t.Helper()
	tr := trial(name, router)
	tr.P99TTFTMs, tr.OutputThroughput = x, y
	rec, err := l.Record(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

// testParetoKnownFront is acceptance 4 (front): minimise p99 TTFT,
// maximise output throughput.
func testParetoKnownFront(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	ids := map[string]int64{}
	for _, p := range []struct {
		name string
		x, y float64
	}{
		{"fast-slow", 100, 500},    // front: lowest latency
		{"mid", 200, 900},          // front
		{"mid-dup", 200, 900},      // front: equal points are all on it
		{"dominated", 250, 800},    // mid beats it on both
		{"same-x-worse", 200, 850}, // mid has the same x and better y
		{"slow-fast", 400, 1200},   // front: highest throughput
		{"slow-same-y", 450, 1200}, // slow-fast has the same y and better x
	} {
		ids[p.name] = recordPoint(t, l, p.name, routerCA, p.x, p.y)
	}
	aborted := trial("aborted-but-great", routerCA)
	aborted.Status, aborted.P99TTFTMs, aborted.OutputThroughput = StatusAborted, 1, 9999
	if _, err := l.Record(ctx, aborted, nil); err != nil {
		t.Fatal(err)
	}

	front, err := l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(front.Points), []string{"fast-slow", "mid", "mid-dup", "slow-fast"}; !slices.Equal(got, want) {
		t.Errorf("front %v, want %v", got, want)
	}
	all, err := l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput", AllPoints: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(all.OnFront()), names(front.Points); !slices.Equal(got, want) {
		t.Errorf("front among all points %v, pruned front %v", got, want)
	}
	if len(all.Points) != 7 {
		t.Errorf("%d points, want the 7 ok rows (aborted rows are not measurements)", len(all.Points))
	}

	// A policy change makes every cache_aware row stale; a new round_robin
	// row then has the front to itself unless stale rows are included.
	recordPoint(t, l, "rr", routerRR, 300, 700)
	front, _ = l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput"})
	if got := names(front.OnFront()); !slices.Equal(got, []string{"rr"}) {
		t.Errorf("front without stale rows %v, want [rr]", got)
	}
	front, _ = l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput", Filter: Filter{IncludeStale: true}})
	if got := names(front.OnFront()); !slices.Equal(got, []string{"fast-slow", "mid", "mid-dup", "slow-fast"}) {
		t.Errorf("front with stale rows %v", got)
	}
	// Filters narrow the candidates.
	front, _ = l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput",
		Filter: Filter{IncludeStale: true, Where: map[string]string{"policy": "cache_aware"}, Name: "dominated"}})
	if got := names(front.OnFront()); !slices.Equal(got, []string{"dominated"}) {
		t.Errorf("filtered front %v", got)
	}
	// Both directions flip with other metrics: maximise x, minimise y.
	front, _ = l.Pareto(ctx, ParetoQuery{X: "output_throughput", Y: "p99_ttft_ms", Filter: Filter{IncludeStale: true}})
	if got := names(front.OnFront()); !slices.Equal(got, []string{"slow-fast", "mid", "mid-dup", "fast-slow"}) {
		t.Errorf("swapped-axes front %v", got)
	}
	if _, err := l.Pareto(ctx, ParetoQuery{X: "ttft", Y: "output_throughput"}); err == nil {
		t.Error("unknown metric accepted")
	}
	if _, err := l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput", Filter: Filter{Where: map[string]string{"colour": "red"}}}); err == nil {
		t.Error("unknown where key accepted")
	}
}

// TestMarkFrontMatchesBruteForce checks the one-pass front against the
// definition on random points with many ties, in all four directions.
func TestMarkFrontMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trialN := range 200 {
		n := 1 + rng.IntN(40)
		pts := make([]Point, n)
		for i := range pts {
			pts[i] = Point{ID: int64(i), X: float64(rng.IntN(8)), Y: float64(rng.IntN(8)), Stale: rng.IntN(5) == 0}
		}
		xd, yd := Direction(trialN%2), Direction(trialN/2%2)
		includeStale := trialN%3 == 0
		markFront(pts, xd, yd, includeStale)
		for _, p := range pts {
			eligible := !p.Stale || includeStale
			dominated := false
			for _, q := range pts {
				if q.Stale && !includeStale {
					continue
				}
				geX, geY := !xd.Better(p.X, q.X), !yd.Better(p.Y, q.Y)
				if geX && geY && (xd.Better(q.X, p.X) || yd.Better(q.Y, p.Y)) {
					dominated = true
				}
			}
			if want := eligible && !dominated; p.OnFront != want {
				t.Fatalf("case %d (x %v, y %v): point %+v on front %v, want %v", trialN, xd, yd, p, p.OnFront, want)
			}
		}
	}
}

func names(pts []Point) []string {
	var out []string
	for _, p := range pts {
		out = append(out, p.Name)
	}
	return out
}

// testPrunedFrontEqualsFullFront checks SQLite's window pruning against
// marking every row, on random rows with many ties, in all four direction
// combinations, with and without stale rows.
func testPrunedFrontEqualsFullFront(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 300 {
		router := routerRR
		if i%7 == 0 {
			router = routerCA // flips make earlier rows stale now and then
		}
		tr := trial("r", router)
		tr.P99TTFTMs, tr.OutputThroughput = float64(rng.IntN(30)), float64(rng.IntN(30))
		tr.Failed, tr.Completed = int64(rng.IntN(30)), int64(rng.IntN(30))
		if _, err := l.Record(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	metrics := [][2]string{{"p99_ttft_ms", "output_throughput"}, {"output_throughput", "p99_ttft_ms"},
		{"failed", "p99_ttft_ms"}, {"completed", "output_throughput"}}
	for _, m := range metrics {
		for _, stale := range []bool{false, true} {
			q := ParetoQuery{X: m[0], Y: m[1], Filter: Filter{IncludeStale: stale}}
			pruned, err := l.Pareto(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			q.AllPoints = true
			full, err := l.Pareto(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ids(pruned.Points), ids(full.OnFront()); !slices.Equal(got, want) || len(got) == 0 {
				t.Errorf("%v stale=%v: pruned front %v, full front %v", m, stale, got, want)
			}
		}
	}
}

func ids(pts []Point) []int64 {
	var out []int64
	for _, p := range pts {
		out = append(out, p.ID)
	}
	return out
}

// "Which row gives the most tokens/s under a TTFT p99 of 300 ms?": a bound
// drops the rows that miss it before the front is taken, so the answer is
// the best row that meets it, not the global best.
func testParetoUnderABound(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	for _, p := range []struct {
		name string
		x, y float64
	}{{"fast", 100, 500}, {"mid", 250, 900}, {"slow", 400, 1200}} {
		recordPoint(t, l, p.name, routerCA, p.x, p.y)
	}
	front, err := l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput",
		Filter: Filter{Bounds: []Bound{{Metric: "p99_ttft_ms", Op: "<", Value: 300}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(front.Points), []string{"fast", "mid"}; !slices.Equal(got, want) {
		t.Fatalf("front under p99_ttft_ms < 300: %v, want %v", got, want)
	}
	best := front.Points[len(front.Points)-1]
	if best.Name != "mid" {
		t.Fatalf("most throughput under the bound: %s, want mid", best.Name)
	}
	if _, err := l.Pareto(ctx, ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput",
		Filter: Filter{Bounds: []Bound{{Metric: "p99_bogus", Op: "<", Value: 1}}}}); err == nil {
		t.Fatal("an unknown bound metric must be an error")
	}
}
