package ledger

import (
	"math/rand/v2"
	"slices"

	"github.com/autoinfer/autoinfer/driver/metrics"
)

// percentile is the q-quantile (q in [0, 1]) of a sorted sample: the
// driver's, so a compared percentile is the one the row stores.
func percentile(sorted []float64, q float64) float64 { return metrics.Percentile(sorted, q) }

// resampler draws bootstrap resamples of one sorted sample and reads their
// percentiles without sorting: a resample is a multiset of the sample's
// ranks, so counting how often each rank was drawn gives the resample in
// sorted order, and a percentile is one walk over the counts (O(n), not
// O(n log n), per resample).
type resampler struct {
	sorted []float64
	counts []int
}

func newResampler(sample []float64) *resampler {
	s := slices.Sorted(slices.Values(sample))
	return &resampler{sorted: s, counts: make([]int, len(s))}
}

// draw fills out[i] with percentile qs[i] of a fresh resample; qs must be
// ascending.
func (r *resampler) draw(rng *rand.Rand, qs []float64, out []float64) {
	n := len(r.sorted)
	clear(r.counts)
	for range n {
		r.counts[rng.IntN(n)]++
	}
	// Walk ranks once, reading order statistics k and k+1 for each q.
	rank, seen := 0, r.counts[0] // ranks [0, seen) of the resample are r.sorted[rank]
	at := func(k int) float64 {
		for k >= seen {
			rank++
			seen += r.counts[rank]
		}
		return r.sorted[rank]
	}
	for i, q := range qs {
		out[i] = metrics.PercentileAt(n, q, at)
	}
}

// bootstrapDiff estimates percentile qs[i] of b minus that of a, with a
// percentile-bootstrap confidence interval: both samples are resampled
// independently `resamples` times. It returns the point differences and
// the interval bounds per q.
func bootstrapDiff(a, b []float64, qs []float64, resamples int, confidence float64, rng *rand.Rand) (diff, lo, hi []float64) {
	ra, rb := newResampler(a), newResampler(b)
	diffs := make([][]float64, len(qs))
	pa, pb := make([]float64, len(qs)), make([]float64, len(qs))
	for range resamples {
		ra.draw(rng, qs, pa)
		rb.draw(rng, qs, pb)
		for i := range qs {
			diffs[i] = append(diffs[i], pb[i]-pa[i])
		}
	}
	tail := (1 - confidence) / 2
	diff, lo, hi = make([]float64, len(qs)), make([]float64, len(qs)), make([]float64, len(qs))
	for i, q := range qs {
		diff[i] = percentile(rb.sorted, q) - percentile(ra.sorted, q)
		slices.Sort(diffs[i])
		lo[i], hi[i] = percentile(diffs[i], tail), percentile(diffs[i], 1-tail)
	}
	return diff, lo, hi
}
