package metrics

import (
	"math"
	"slices"
	"strconv"
)

// stats are the moments and order statistics of one metric, in ms.
type stats struct {
	mean, std, median float64
	sorted            []float64
}

// describe computes mean, population standard deviation (numpy's default
// ddof=0) and median of xs. An empty xs behaves like vllm's `xs or 0`: every
// figure is 0.
func describe(xs []float64) stats {
	if len(xs) == 0 {
		xs = []float64{0}
	}
	s := stats{sorted: slices.Clone(xs)}
	slices.Sort(s.sorted)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	s.mean = sum / float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - s.mean) * (x - s.mean)
	}
	s.std = math.Sqrt(ss / float64(len(xs)))
	// np.median averages the two middle values of an even count.
	n := len(s.sorted)
	s.median = s.sorted[n/2]
	if n%2 == 0 {
		s.median = (s.sorted[n/2-1] + s.sorted[n/2]) / 2
	}
	return s
}

// percentile is numpy.percentile's default "linear" method, with numpy's
// floating-point steps so results agree to the last bit: the virtual index
// (n−1)·q for q = p/100, and numpy's two-sided lerp between the
// neighbouring sorted values.
func (s stats) percentile(p float64) float64 {
	n := len(s.sorted)
	q := p / 100
	vi := float64(n-1) * q
	lo := int(math.Floor(vi))
	lo = max(0, min(lo, n-1))
	hi := min(lo+1, n-1)
	t := vi - float64(lo)
	a, b := s.sorted[lo], s.sorted[hi]
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

// PercentileWord renders p as vllm does in result keys: an integer when
// whole (99 → "99"), else the shortest decimal (99.9 → "99.9").
func PercentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}
