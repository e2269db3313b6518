package metrics

import (
	"math"
	"testing"
	"time"
)

func TestClientLagFlag(t *testing.T) {
	t.Parallel()
	ok := func(itls []float64, bursts int) RequestRecord {
		return RequestRecord{Sent: true, Success: true, OutputTokens: len(itls) + 1, ITLMs: itls, BurstITLs: bursts}
	}
	steady := []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	for _, tc := range []struct {
		name      string
		recs      []RequestRecord
		sched     float64
		reason    string
		wantShare float64
	}{
		{"kept up", []RequestRecord{ok(steady, 0), ok(steady, 0)}, 1, "", 0},
		{"one burst in 200 ITLs is noise", []RequestRecord{ok(make200(), 1)}, 1, "", 0.005},
		{"read in bursts", []RequestRecord{ok([]float64{0, 0, 30, 0, 0, 30}, 4), ok(steady, 0)}, 1, "burst", 0.25},
		{"scheduling latency near the ITL", []RequestRecord{ok(steady, 0)}, 6, "sched", 0},
	} {
		s := Summarize(tc.recs, Params{Duration: time.Second, SchedP99Ms: tc.sched})
		if math.Abs(s.ClientBurstITLFraction-tc.wantShare) > 1e-12 || s.ClientSchedP99Ms != tc.sched {
			t.Errorf("%s: burst share %g, sched %g; want %g, %g", tc.name, s.ClientBurstITLFraction, s.ClientSchedP99Ms, tc.wantShare, tc.sched)
		}
		switch {
		case tc.reason == "" && s.ClientLag != nil:
			t.Errorf("%s: flagged %v", tc.name, s.ClientLag)
		case tc.reason != "" && (s.ClientLag == nil || s.ClientLag.Reason != tc.reason):
			t.Errorf("%s: flag %v, want reason %q", tc.name, s.ClientLag, tc.reason)
		}
	}
}

func make200() []float64 {
	x := make([]float64, 200)
	for i := range x {
		x[i] = 10
	}
	return x
}

func TestSchedP99FromHistogramDelta(t *testing.T) {
	t.Parallel()
	buckets := []float64{0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, math.Inf(1)}
	before := SchedSample{counts: []uint64{5, 5, 0, 0, 0, 0}, buckets: buckets}
	// Since then: 98 short waits, one of ~0.5 ms, one over 10 ms.
	after := SchedSample{counts: []uint64{5, 103, 0, 1, 0, 1}, buckets: buckets}
	if got := after.P99MsSince(before); got != 1 { // 99th of 100 lies in (1e-4, 1e-3]: 1 ms
		t.Errorf("p99 = %g ms, want 1", got)
	}
	if got := before.P99MsSince(before); got != 0 {
		t.Errorf("p99 without samples = %g, want 0", got)
	}
	if s := SampleSched(); len(s.counts) == 0 || len(s.buckets) != len(s.counts)+1 {
		t.Errorf("runtime histogram has %d counts, %d bucket bounds", len(s.counts), len(s.buckets))
	}
}
