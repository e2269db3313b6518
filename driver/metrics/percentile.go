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

// percentile is Percentile at p/100, as np.percentile divides first.
func (s stats) percentile(p float64) float64 { return Percentile(s.sorted, p/100) }

// Percentile is the q-quantile (q in [0, 1]) of sorted values by
// numpy.percentile's default "linear" method, which vllm bench serve uses,
// with numpy's floating-point steps so results agree to the last bit. It is
// the one percentile of autoinfer: the driver's summaries, the ledger's
// bootstrap and `sim overhead` all read it. An empty sample has none (NaN).
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return PercentileAt(len(sorted), q, func(k int) float64 { return sorted[k] })
}

// PercentileAt is Percentile over n sorted values read by rank, for a
// sample held in another form (the ledger's bootstrap resamples are counts
// per rank). at is called at most twice, with ascending ranks. numpy's
// steps: the virtual index (n−1)·q, its floor and fraction t, and a
// two-sided lerp between the neighbouring values (from the upper one when
// t ≥ 0.5), which differs from a + t·(b−a) in the last bit.
func PercentileAt(n int, q float64, at func(k int) float64) float64 {
	vi := float64(n-1) * q
	lo := max(0, min(int(math.Floor(vi)), n-1))
	hi := min(lo+1, n-1)
	t := vi - float64(lo)
	a, b := at(lo), at(hi)
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
