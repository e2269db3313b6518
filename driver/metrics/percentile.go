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
	s.median = s.percentile(50)
	return s
}

// percentile is numpy.percentile's default "linear" method: the value at
// rank p/100·(n−1) of the sorted values, interpolating between neighbours.
func (s stats) percentile(p float64) float64 {
	n := len(s.sorted)
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, n-1)
	frac := rank - float64(lo)
	return s.sorted[lo] + (s.sorted[hi]-s.sorted[lo])*frac
}

// PercentileWord renders p as vllm does in result keys: an integer when
// whole (99 → "99"), else the shortest decimal (99.9 → "99.9").
func PercentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}
