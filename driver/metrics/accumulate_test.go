package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// streamRecords are n successful requests sent 10 ms apart with uniform
// latencies and a few failures, in index order.
func streamRecords(n int) []RequestRecord {
	r := rand.New(rand.NewPCG(3, 4))
	recs := make([]RequestRecord, n)
	for i := range recs {
		rec := RequestRecord{Index: i, Sent: true, SendMs: float64(i) * 10, DueMs: float64(i) * 10, ScheduleDelayMs: r.Float64()}
		if i%97 == 5 {
			rec.ErrorType, rec.Status = "http", 500
		} else {
			rec.Success, rec.TTFTMs, rec.OutputTokens, rec.InputTokens = true, 1+999*r.Float64(), 4, 10
			rec.ITLMs = []float64{1 + 99*r.Float64(), 1 + 99*r.Float64(), 1 + 99*r.Float64()}
			rec.E2ELMs = rec.TTFTMs + rec.ITLMs[0] + rec.ITLMs[1] + rec.ITLMs[2]
			rec.TPOTMs = (rec.E2ELMs - rec.TTFTMs) / 3
		}
		recs[i] = rec
	}
	return recs
}

// feed adds recs to a in a shuffled (finish-like) order without settling:
// the peaks wait for Summary.
func feed(a *Accumulator, recs []RequestRecord) {
	order := rand.New(rand.NewPCG(5, 6)).Perm(len(recs))
	for _, i := range order {
		a.Add(&recs[i])
	}
}

func TestAccumulatorExactInAnyOrder(t *testing.T) {
	recs := streamRecords(5000)
	p := Params{Duration: time.Minute, Goodput: SLO{TTFTMs: 500}, Percentiles: []float64{95}}
	want := Summarize(recs, p)
	a := NewAccumulator(p, 0)
	feed(a, recs)
	got := a.Summary()
	if got.PercentileRelError != 0 {
		t.Fatalf("an unlimited accumulator reported percentile error %v", got.PercentileRelError)
	}
	exact := map[string][2]float64{
		"p99_ttft": {got.P99TTFTMs, want.P99TTFTMs}, "median_itl": {got.MedianITLMs, want.MedianITLMs},
		"p95_e2el":         {got.ExtraPercentiles["p95_e2el_ms"], want.ExtraPercentiles["p95_e2el_ms"]},
		"max_tokens_per_s": {got.MaxOutputTokensPerS, want.MaxOutputTokensPerS},
		"max_concurrent":   {float64(got.MaxConcurrentRequests), float64(want.MaxConcurrentRequests)},
		"completed":        {float64(got.Completed), float64(want.Completed)}, "goodput": {*got.RequestGoodput, *want.RequestGoodput},
		"max_delay": {got.MaxScheduleDelayMs, want.MaxScheduleDelayMs},
	}
	for k, v := range exact {
		if v[0] != v[1] {
			t.Errorf("%s: streamed %v, Summarize %v", k, v[0], v[1])
		}
	}
	if math.Abs(got.MeanTPOTMs-want.MeanTPOTMs) > 1e-9*want.MeanTPOTMs {
		t.Errorf("mean tpot: streamed %v, Summarize %v", got.MeanTPOTMs, want.MeanTPOTMs)
	}
}

func TestAccumulatorBoundedWithinRelError(t *testing.T) {
	recs := streamRecords(50000)
	p := Params{Duration: 10 * time.Minute}
	want := Summarize(recs, p)
	a := NewAccumulator(p, 1000)
	feed(a, recs)
	got := a.Summary()
	if got.PercentileRelError != PercentileRelError {
		t.Fatalf("percentile_rel_error = %v, want %v once values exceed the limit", got.PercentileRelError, PercentileRelError)
	}
	// The histogram's bound plus the gap between neighbouring order
	// statistics (numpy interpolates, the histogram takes a rank).
	tol := PercentileRelError + 1e-4
	for k, v := range map[string][2]float64{
		"p50_ttft": {got.P50TTFTMs, want.P50TTFTMs}, "p99_ttft": {got.P99TTFTMs, want.P99TTFTMs},
		"p90_itl": {got.P90ITLMs, want.P90ITLMs}, "p99_e2el": {got.P99E2ELMs, want.P99E2ELMs},
		"median_tpot": {got.MedianTPOTMs, want.MedianTPOTMs}, "std_e2el": {got.StdE2ELMs, want.StdE2ELMs},
	} {
		if math.Abs(v[0]-v[1]) > tol*v[1] {
			t.Errorf("%s: streamed %v, exact %v (relative error %.2g > %.2g)", k, v[0], v[1], math.Abs(v[0]-v[1])/v[1], tol)
		}
	}
	if got.MaxConcurrentRequests != want.MaxConcurrentRequests || got.MaxOutputTokensPerS != want.MaxOutputTokensPerS || got.Completed != want.Completed {
		t.Errorf("counts and peaks must stay exact: got %d %v %d, want %d %v %d", got.MaxConcurrentRequests, got.MaxOutputTokensPerS,
			got.Completed, want.MaxConcurrentRequests, want.MaxOutputTokensPerS, want.Completed)
	}
}
