package metrics

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// The expected values are numpy's: np.percentile([1, 2, 3, 4, 10], p) and
// np.std of the same list.
func TestDescribeMatchesNumpy(t *testing.T) {
	s := describe([]float64{4, 1, 10, 3, 2})
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {50, 3}, {90, 7.6}, {99, 9.76}, {99.9, 9.976}, {100, 10}, {25, 2}, {33.3, 2.332}} {
		if got := s.percentile(tc.p); !near(got, tc.want) {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !near(s.mean, 4) || !near(s.std, math.Sqrt(10)) || !near(s.median, 3) {
		t.Errorf("mean %v std %v median %v, want 4, √10, 3", s.mean, s.std, s.median)
	}
	if e := describe(nil); e.mean != 0 || e.percentile(99) != 0 {
		t.Errorf("empty list gives %+v, want zeros like vllm's `xs or 0`", e)
	}
}

func TestPercentileWord(t *testing.T) {
	for p, want := range map[float64]string{99: "99", 99.9: "99.9", 50: "50", 99.99: "99.99"} {
		if got := PercentileWord(p); got != want {
			t.Errorf("PercentileWord(%v) = %q, want %q", p, got, want)
		}
	}
}

func TestSummarizeCountsGoodputPeaks(t *testing.T) {
	recs := []RequestRecord{
		{Index: 0, Sent: true, Success: true, Status: 200, SendMs: 0, TTFTMs: 100, ITLMs: []float64{50, 50}, E2ELMs: 200, TPOTMs: 50, InputTokens: 10, OutputTokens: 3},
		{Index: 1, Sent: true, Success: true, Status: 200, SendMs: 500, TTFTMs: 300, ITLMs: []float64{700}, E2ELMs: 1000, TPOTMs: 700, InputTokens: 20, OutputTokens: 2},
		{Index: 2, Sent: true, Success: true, Status: 200, SendMs: 1000, TTFTMs: 10, E2ELMs: 10, InputTokens: 5, OutputTokens: 1},
		{Index: 3, Sent: true, Status: 503, ErrorType: "service_unavailable", SendMs: 1500},
		{Index: 4, Sent: true, Status: 0, ErrorType: "transport_error", SendMs: 2000},
	}
	s := Summarize(recs, Params{Duration: 4 * time.Second, Goodput: SLO{TTFTMs: 200, TPOTMs: 100}, Percentiles: []float64{99, 99.9}})
	if s.Completed != 3 || s.Failed != 2 || s.TotalInputTokens != 35 || s.TotalOutputTokens != 6 {
		t.Fatalf("counts: %+v", s)
	}
	if !near(s.RequestThroughput, 0.75) || !near(s.OutputThroughput, 1.5) || !near(s.TotalTokenThroughput, 41.0/4) {
		t.Errorf("throughputs %v %v %v", s.RequestThroughput, s.OutputThroughput, s.TotalTokenThroughput)
	}
	// Requests 0 and 2 meet both bounds (request 2 has TPOT 0 by vllm's rule).
	if s.RequestGoodput == nil || !near(*s.RequestGoodput, 0.5) {
		t.Errorf("goodput %v, want 0.5", s.RequestGoodput)
	}
	if s.ErrorsByStatus["503"] != 1 || s.ErrorsByStatus["no_response"] != 1 || s.ErrorsByType["service_unavailable"] != 1 || s.ErrorsByType["transport_error"] != 1 {
		t.Errorf("breakdown %v %v", s.ErrorsByStatus, s.ErrorsByType)
	}
	// TPOT only over requests with > 1 output token: 50 and 700.
	if !near(s.MeanTPOTMs, 375) || !near(s.MeanITLMs, 800.0/3) || !near(s.MedianTTFTMs, 100) {
		t.Errorf("tpot %v itl %v ttft median %v", s.MeanTPOTMs, s.MeanITLMs, s.MedianTTFTMs)
	}
	// Chunks at 100, 150, 200, 800 ms fall in second 0, 1500 and 1010 ms in
	// second 1; requests 0 and 1 are active in second 0, 1 and 2 in second 1.
	if s.MaxOutputTokensPerS != 4 || s.MaxConcurrentRequests != 2 {
		t.Errorf("peaks %v tok/s, %d concurrent; want 4 and 2", s.MaxOutputTokensPerS, s.MaxConcurrentRequests)
	}
	if !near(s.AchievedRequestRate, 5/2.0) {
		t.Errorf("achieved rate %v, want 5 sent by 2 s", s.AchievedRequestRate)
	}
	if _, ok := s.ExtraPercentiles["p99.9_ttft_ms"]; !ok || len(s.ExtraPercentiles) != 4 {
		t.Errorf("extra percentiles %v, want p99.9 for the 4 metrics only", s.ExtraPercentiles)
	}
}

func TestSummaryJSONKeys(t *testing.T) {
	s := Summarize(nil, Params{Percentiles: []float64{99.9}})
	s.RequestRate = Rate(math.Inf(1))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"request_rate":"inf"`, `"request_goodput":null`, `"max_concurrency":null`, `"p99_ttft_ms":0`, `"p99.9_e2el_ms":0`, `"mean_schedule_delay_ms":0`, `"stream_hash":""`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(back.RequestRate), 1) || len(back.ExtraPercentiles) != 4 {
		t.Errorf("round trip lost data: rate %v extras %v", back.RequestRate, back.ExtraPercentiles)
	}
}

func TestLiveSnapshotWithinHDRPrecision(t *testing.T) {
	l := NewLive()
	for i := 1; i <= 1000; i++ {
		l.Record(&RequestRecord{Success: true, TTFTMs: float64(i), E2ELMs: float64(i) * 2})
	}
	l.Record(&RequestRecord{})
	s := l.Snapshot()
	if s.Completed != 1000 || s.Failed != 1 {
		t.Fatalf("counts %+v", s)
	}
	if math.Abs(s.P99TTFTMs-990)/990 > 0.001 || math.Abs(s.P50E2ELMs-1000)/1000 > 0.001 {
		t.Errorf("live p99 TTFT %v (want 990), p50 E2EL %v (want 1000) within 0.1%%", s.P99TTFTMs, s.P50E2ELMs)
	}
}

// TestPercentilesBitExactWithNumpy compares against values numpy 1.24
// printed for this list (np.percentile, np.median, np.mean, np.std):
// percentiles and medians must be identical to the last bit; mean and std
// to 1e-12 (numpy sums pairwise).
func TestPercentilesBitExactWithNumpy(t *testing.T) {
	xs := []float64{45.447, 4.428, 18.72, 23.956, 34.551, 36.303, 25.298, 10.64, 24.751, 52.631, 15.097, 8.511, 13.423, 57.531, 10.923, 29.147, 11.65, 2.384, 13.28, 24.26, 6.932, 204.609, 22.48, 13.707, 16.253, 50.803, 17.61, 4.125, 39.165, 57.7, 6.089, 10.552, 89.51, 18.632, 19.092, 16.554, 20.05}
	want := map[float64]float64{0: 2.384, 1: 3.01076, 10: 6.5948, 25: 11.65, 50: 18.72, 75: 34.551, 90: 54.590999999999994, 95: 64.06199999999987, 99: 163.17336000000006, 99.9: 200.46543600000066, 100: 204.609}
	s := describe(xs)
	for p, w := range want {
		if got := s.percentile(p); got != w {
			t.Errorf("p%v = %v, numpy %v", p, got, w)
		}
	}
	if s.median != 18.72 || math.Abs(s.mean-29.102540540540538) > 1e-12 || math.Abs(s.std-34.552998356691795) > 1e-12 {
		t.Errorf("median %v mean %v std %v", s.median, s.mean, s.std)
	}
	if m := describe(xs[:36]).median; m != 18.676000000000002 {
		t.Errorf("even-count median %v, numpy 18.676000000000002", m)
	}
}

// TestPercentileMatchesNumpyTable: Percentile against np.percentile's
// default (linear) values. The first rows are derived by hand from numpy's
// steps (virtual index (n−1)·q, fraction t, lerp from the upper neighbour
// when t ≥ 0.5); the last are numpy 1.24's output for the list of
// TestPercentilesBitExactWithNumpy.
func TestPercentileMatchesNumpyTable(t *testing.T) {
	long := []float64{45.447, 4.428, 18.72, 23.956, 34.551, 36.303, 25.298, 10.64, 24.751, 52.631, 15.097, 8.511, 13.423, 57.531, 10.923, 29.147, 11.65, 2.384, 13.28, 24.26, 6.932, 204.609, 22.48, 13.707, 16.253, 50.803, 17.61, 4.125, 39.165, 57.7, 6.089, 10.552, 89.51, 18.632, 19.092, 16.554, 20.05}
	slices.Sort(long)
	for _, c := range []struct {
		name   string
		sorted []float64
		p      float64 // percent: np.percentile divides by 100 at run time
		want   float64
	}{
		{"one value", []float64{7}, 30, 7},
		{"even median", []float64{1, 2, 3, 4}, 50, 2.5},                      // vi 1.5, t 0.5: 3 − 1·0.5
		{"nearest rank would say 50", []float64{10, 20, 30, 40, 50}, 90, 46}, // vi 3.6: 50 − 10·0.4
		{"min", []float64{1, 2, 3, 4}, 0, 1},
		{"max", []float64{1, 2, 3, 4}, 100, 4},
		// vi 0.7, t 0.7: 0.2 − 0.1·0.30000000000000004 = 0.17, as
		// numpy prints; a + t·(b − a) gives 0.16999999999999998.
		{"two-sided lerp", []float64{0.1, 0.2}, 70, 0.17},
		// vi 2.9699999999999998, t 0.9699999999999998: 4 − 1·0.03000000000000025.
		{"p99 of four", []float64{1, 2, 3, 4}, 99, 3.9699999999999998},
		{"numpy p1", long, 1, 3.01076},
		{"numpy p90", long, 90, 54.590999999999994},
		{"numpy p95", long, 95, 64.06199999999987},
		{"numpy p99", long, 99, 163.17336000000006},
		{"numpy p99.9", long, 99.9, 200.46543600000066},
	} {
		if got := Percentile(c.sorted, c.p/100); got != c.want {
			t.Errorf("%s: Percentile(%v, %v/100) = %v, numpy %v", c.name, c.sorted, c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Percentile of nothing = %v, want NaN", got)
	}
}
