package metrics

import (
	"github.com/HdrHistogram/hdrhistogram-go"
)

// Live keeps running TTFT and E2EL distributions while a run is in progress,
// in HDR histograms of microseconds with 3 significant figures: any value
// from 1 µs to 1 h is held within 0.1%, in constant memory and O(1) per
// record. The final Summary does not use them (it computes exact
// percentiles from the records); they give progress displays a p50/p99
// without sorting. Live is not safe for concurrent use: one goroutine owns it.
type Live struct {
	ttft, e2el *hdrhistogram.Histogram
	done, fail int
}

// NewLive returns empty live distributions.
func NewLive() *Live {
	const lowest, highest, sigfigs = 1, 3_600_000_000, 3
	return &Live{
		ttft: hdrhistogram.New(lowest, highest, sigfigs),
		e2el: hdrhistogram.New(lowest, highest, sigfigs),
	}
}

// Record adds one finished request.
func (l *Live) Record(r *RequestRecord) {
	if r.ErrorType == NotSent || r.ErrorType == Incomplete {
		return
	}
	if !r.Success {
		l.fail++
		return
	}
	l.done++
	// Values beyond an hour are clamped by the histogram's range check;
	// RecordValue's error is only that, so the display simply ignores them.
	_ = l.ttft.RecordValue(max(1, int64(r.TTFTMs*1000)))
	_ = l.e2el.RecordValue(max(1, int64(r.E2ELMs*1000)))
}

// Snapshot is a live view of a run.
type Snapshot struct {
	Completed, Failed    int
	P50TTFTMs, P99TTFTMs float64
	P50E2ELMs, P99E2ELMs float64
}

// Snapshot returns the current counts and percentiles.
func (l *Live) Snapshot() Snapshot {
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	return Snapshot{
		Completed: l.done, Failed: l.fail,
		P50TTFTMs: ms(l.ttft, 50), P99TTFTMs: ms(l.ttft, 99),
		P50E2ELMs: ms(l.e2el, 50), P99E2ELMs: ms(l.e2el, 99),
	}
}
