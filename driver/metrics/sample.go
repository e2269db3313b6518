package metrics

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// sample is one metric's values: exact while there are at most limit of
// them (limit 0: always), then a histogram of nanoseconds with three
// significant digits and running moments.
type sample struct {
	limit int
	xs    []float64
	h     *hdrhistogram.Histogram
	// Moments and maximum over every value (Welford), used once h is.
	n        int
	mean, m2 float64
	max      float64
}

// histHighestNs is the top of the histogram's range in ns (about 27 hours;
// the bottom is 1 ns).
const histHighestNs = 1e14

func (s *sample) add(x float64) {
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
	if s.n == 1 || x > s.max {
		s.max = x
	}
	if s.h == nil {
		s.xs = append(s.xs, x)
		if s.limit == 0 || len(s.xs) <= s.limit {
			return
		}
		s.h = hdrhistogram.New(1, histHighestNs, 3)
		for _, v := range s.xs {
			s.record(v)
		}
		s.xs = nil
		return
	}
	s.record(x)
}

// record puts x (ms) into the histogram; values outside its range are
// clamped to it (a negative or above-27-hour latency is no latency the
// histogram needs to resolve).
func (s *sample) record(x float64) {
	ns := int64(math.Round(min(max(x*1e6, 0), histHighestNs)))
	_ = s.h.RecordValue(ns) // in range by construction
}

// dist is a sample's moments and order statistics.
type dist struct {
	stats
	h   *hdrhistogram.Histogram
	max float64
}

func (s *sample) describe() dist {
	if s.h == nil {
		st := describe(s.xs)
		return dist{stats: st, max: st.sorted[len(st.sorted)-1]}
	}
	d := dist{h: s.h, max: s.max}
	d.mean, d.std = s.mean, math.Sqrt(s.m2/float64(s.n))
	d.median = d.percentile(50)
	return d
}

func (d dist) percentile(p float64) float64 {
	if d.h == nil {
		return d.stats.percentile(p)
	}
	return float64(d.h.ValueAtQuantile(p)) / 1e6
}
