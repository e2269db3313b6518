package ledger

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testCompareKnownAnswers is acceptance 4 (compare). B's TTFTs are A's
// plus 50 ms, so every TTFT percentile differs by exactly 50 ms and the
// interval must exclude 0 with A better; TPOTs are identical samples, so
// the point difference is 0 and the interval must contain it.
func testCompareKnownAnswers(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	base := make([]float64, 400)
	for i := range base {
		base[i] = 100 + rng.ExpFloat64()*20
	}
	mk := func(shift float64) []Request {
		r := requests(len(base), func(i int) float64 { return base[i] + shift })
		for i := range r {
			r[i].TPOTMs = 10 + base[i]/100 // same in A and B
		}
		return r
	}
	a := trial("A", routerRR)
	a.P99TTFTMs, a.OutputThroughput = 180, 1000
	ra, err := l.Record(ctx, a, mk(0))
	if err != nil {
		t.Fatal(err)
	}
	b := trial("B", routerRR)
	b.P99TTFTMs, b.OutputThroughput = 230, 1100
	rb, err := l.Record(ctx, b, mk(50))
	if err != nil {
		t.Fatal(err)
	}

	c, err := l.Compare(ctx, "A", strconv.FormatInt(rb.ID, 10), CompareOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.A.Resolved != "name" || c.A.IDs[0] != ra.ID || c.B.Resolved != "trial" || c.A.Requests != 400 {
		t.Errorf("resolution: A %+v, B %+v", c.A, c.B)
	}
	byName := map[string]Interval{}
	for _, iv := range c.Intervals {
		byName[iv.Metric] = iv
	}
	for _, m := range []string{"p50_ttft_ms", "p99_ttft_ms"} {
		iv := byName[m]
		if math.Abs(iv.Diff-50) > 1e-9 || !iv.Significant || iv.Better != "A" || iv.Lo > 50 || iv.Hi < 50 || iv.Lo <= 0 {
			t.Errorf("%s: %+v; want diff 50, significant, A better, CI around 50 excluding 0", m, iv)
		}
	}
	for _, m := range []string{"p50_tpot_ms", "p99_tpot_ms"} {
		iv := byName[m]
		if iv.Diff != 0 || iv.Significant || iv.Better != "" || iv.Lo > 0 || iv.Hi < 0 {
			t.Errorf("%s: %+v; want diff 0, not significant", m, iv)
		}
	}
	deltas := map[string]MetricDelta{}
	for _, d := range c.Metrics {
		deltas[d.Metric] = d
	}
	if d := deltas["p99_ttft_ms"]; d.Diff == nil || *d.Diff != 50 || d.Better != "A" {
		t.Errorf("p99_ttft_ms side by side: %+v", d)
	}
	if d := deltas["output_throughput"]; d.Diff == nil || *d.Diff != 100 || d.Better != "B" {
		t.Errorf("output_throughput side by side: %+v", d)
	}
	// Same seed, same intervals.
	again, _ := l.Compare(ctx, "A", strconv.FormatInt(rb.ID, 10), CompareOptions{Seed: 3})
	if !slices.Equal(again.Intervals, c.Intervals) {
		t.Error("equal seeds gave different intervals")
	}
}

func testCompareSweepsAndResolutionErrors(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	for i, sweep := range []string{"s1", "s1", "s2"} {
		tr := trial("t", routerRR)
		tr.SweepID = sweep
		tr.OutputThroughput = float64(100 * (i + 1))
		if _, err := l.Record(ctx, tr, requests(10, func(j int) float64 { return float64(j + i) })); err != nil {
			t.Fatal(err)
		}
	}
	c, err := l.Compare(ctx, "s1", "s2", CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if c.A.Resolved != "sweep" || len(c.A.IDs) != 2 || c.A.Requests != 20 || c.B.Requests != 10 {
		t.Errorf("sweep sides: %+v / %+v", c.A, c.B)
	}
	for _, d := range c.Metrics {
		if d.Metric == "output_throughput" && (d.A == nil || d.B == nil || *d.A != 150 || *d.B != 300) {
			t.Errorf("sweep means: %+v; want A the mean 150 of its two trials", d)
		}
	}
	if _, err := l.Compare(ctx, "nope", "s1", CompareOptions{}); err == nil {
		t.Error("unknown reference resolved")
	}
	if _, err := l.Compare(ctx, "999", "s1", CompareOptions{}); err == nil {
		t.Error("missing id resolved")
	}
}

func TestResamplerPercentilesMatchSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	sample := make([]float64, 57)
	for i := range sample {
		sample[i] = math.Round(rng.NormFloat64() * 10)
	}
	r := newResampler(sample)
	qs := []float64{0, 0.5, 0.9, 0.99, 1}
	got := make([]float64, len(qs))
	for range 50 {
		// Same stream twice: once through the counting walk, once by hand.
		seed := rng.Uint64()
		r.draw(rand.New(rand.NewPCG(seed, 0)), qs, got)
		ref := rand.New(rand.NewPCG(seed, 0))
		re := make([]float64, len(sample))
		for i := range re {
			re[i] = r.sorted[ref.IntN(len(sample))]
		}
		slices.Sort(re)
		for i, q := range qs {
			if want := percentile(re, q); math.Abs(got[i]-want) > 1e-9 {
				t.Fatalf("q %g: counting walk %g, sorted resample %g", q, got[i], want)
			}
		}
	}
	if p := percentile([]float64{1, 2, 3, 4}, 0.5); p != 2.5 {
		t.Errorf("median of 1..4 = %g, want 2.5 (linear interpolation)", p)
	}
}

// testCompareFlagsShedding: B's latencies are lower, but it refused one
// request in five with 503 or 429; the comparison names the shed rates and
// flags the figures B wins. Without shedding on B the flag is gone.
func testCompareFlagsShedding(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	record := func(name string, shift float64, shedEvery int) int64 {
		t.Helper()
		reqs := requests(200, func(i int) float64 { return 100 + float64(i%7) + shift })
		for i := range reqs {
			if shedEvery > 0 && i%shedEvery == 0 {
				reqs[i].Status = []string{"http_503", "http_429"}[i/shedEvery%2]
			}
		}
		tr := trial(name, routerRR)
		r, err := l.Record(ctx, tr, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a := record("A", 0, 0)
	b := record("B", -40, 5)
	honest := record("C", -40, 0)
	c, err := l.Compare(ctx, strconv.FormatInt(a, 10), strconv.FormatInt(b, 10), CompareOptions{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if c.AShed != (Shedding{Offered: 200}) || c.BShed != (Shedding{Offered: 200, Shed: 40, Rate: 0.2}) {
		t.Errorf("shedding A %+v, B %+v; want 0 of 200 and 40 of 200", c.AShed, c.BShed)
	}
	if !strings.Contains(c.ShedFlag, "B shed 20.0 % of its offered requests (40 of 200, 503/429) against A's 0.0 %") ||
		!strings.Contains(c.ShedFlag, "p99_ttft_ms (bootstrap)") {
		t.Errorf("flag %q: want B flagged for shedding 20 %%", c.ShedFlag)
	}
	c, err = l.Compare(ctx, strconv.FormatInt(a, 10), strconv.FormatInt(honest, 10), CompareOptions{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if c.ShedFlag != "" {
		t.Errorf("flag %q without shedding", c.ShedFlag)
	}
}
