package metrics

import (
	"fmt"
	"math"
	"runtime/metrics"
)

// Client-lag limits. A stream read by a saturated process is read in
// bursts: several events wait in the client's buffers and get timestamps a
// few microseconds apart, so the client-side ITL reads ~0 for them and the
// wait shows up as one long gap instead. Such a run must not report an ITL
// as if it were the server's.
const (
	// BurstITLLimit flags a run when more than this share of its ITLs were
	// measured on events already waiting when the previous one was read.
	// A client that keeps up reads each event as it arrives; a server that
	// sends two events in one write (rare) can cause a few.
	BurstITLLimit = 0.01
	// SchedLatencyLimit flags a run when the p99 time runnable goroutines
	// (the stream readers among them) waited for a thread exceeds this
	// share of the median ITL: individual ITLs are then displaced by about
	// as much.
	SchedLatencyLimit = 0.5
)

// ClientLag is the typed flag of a run whose client fell behind the streams
// it read; its ITLs (and TPOT, E2EL to a lesser degree) then describe the
// client as much as the server. Reason names the rule that fired: "burst"
// or "sched".
type ClientLag struct {
	Reason           string  `json:"reason"`
	BurstITLFraction float64 `json:"burst_itl_fraction"`
	SchedP99Ms       float64 `json:"sched_p99_ms"`
	MedianITLMs      float64 `json:"median_itl_ms"`
}

func (c ClientLag) String() string {
	return fmt.Sprintf("client lag (%s): %.1f%% of ITLs read in bursts, p99 scheduling latency %.2f ms vs median ITL %.2f ms",
		c.Reason, 100*c.BurstITLFraction, c.SchedP99Ms, c.MedianITLMs)
}

// clientLag applies the limits; nil when the client kept up.
func clientLag(burstFraction, schedP99Ms, medianITLMs float64) *ClientLag {
	c := &ClientLag{BurstITLFraction: burstFraction, SchedP99Ms: schedP99Ms, MedianITLMs: medianITLMs}
	switch {
	case burstFraction > BurstITLLimit:
		c.Reason = "burst"
	case medianITLMs > 0 && schedP99Ms > SchedLatencyLimit*medianITLMs:
		c.Reason = "sched"
	default:
		return nil
	}
	return c
}

// SchedSample is a reading of the process's goroutine scheduling latency
// histogram (runtime/metrics /sched/latencies:seconds): how long goroutines
// were runnable before they ran.
type SchedSample struct {
	counts  []uint64
	buckets []float64
}

const schedLatencies = "/sched/latencies:seconds"

// SampleSched reads the histogram now.
func SampleSched() SchedSample {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return SchedSample{}
	}
	h := s[0].Value.Float64Histogram()
	return SchedSample{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// P99MsSince is the 99th percentile, in milliseconds, of the scheduling
// latencies recorded between before and s: the upper bound of the bucket
// holding it (its lower bound when that is infinite). 0 without samples.
func (s SchedSample) P99MsSince(before SchedSample) float64 {
	var total uint64
	delta := make([]uint64, len(s.counts))
	for i, c := range s.counts {
		if i < len(before.counts) {
			c -= before.counts[i]
		}
		delta[i] = c
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(0.99 * float64(total)))
	var seen uint64
	for i, c := range delta {
		seen += c
		if seen >= rank {
			hi := s.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = s.buckets[i]
			}
			return hi * 1e3
		}
	}
	return 0
}
