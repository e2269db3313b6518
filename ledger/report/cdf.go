package report

import (
	"slices"

	"github.com/autoinfer/autoinfer/ledger"
)

// cdfOf builds a trial's empirical distributions from its completed
// requests: every TTFT and E2EL, and the TPOT of requests with more than
// one output token (undefined otherwise, as in vllm bench serve and
// ledger.Compare).
func cdfOf(id int64, reqs []ledger.Request, maxPoints int) TrialCDF {
	var ttft, tpot, e2el []float64
	for _, r := range reqs {
		if r.Status != ledger.RequestOK {
			continue
		}
		ttft = append(ttft, r.TTFTMs)
		e2el = append(e2el, r.E2ELMs)
		if r.OutputTokens > 1 {
			tpot = append(tpot, r.TPOTMs)
		}
	}
	return TrialCDF{
		ID:   id,
		N:    map[string]int{"ttft": len(ttft), "tpot": len(tpot), "e2el": len(e2el)},
		TTFT: ecdf(ttft, maxPoints), TPOT: ecdf(tpot, maxPoints), E2EL: ecdf(e2el, maxPoints),
	}
}

// ecdf returns points (x, F(x)) of the empirical CDF, F(x_(i)) = (i+1)/n
// for the sorted sample x_(0..n-1). Past maxPoints it keeps evenly spaced
// ranks, always the first and the last, so the drawn curve passes through
// exact points of the sample's distribution and spans its whole range.
func ecdf(sample []float64, maxPoints int) [][2]float64 {
	n := len(sample)
	if n == 0 {
		return [][2]float64{}
	}
	sorted := slices.Sorted(slices.Values(sample))
	point := func(i int) [2]float64 { return [2]float64{sorted[i], float64(i+1) / float64(n)} }
	if n <= maxPoints {
		out := make([][2]float64, n)
		for i := range sorted {
			out[i] = point(i)
		}
		return out
	}
	out := make([][2]float64, 0, maxPoints)
	last := -1
	for k := range maxPoints {
		i := k * (n - 1) / (maxPoints - 1)
		if i != last {
			out = append(out, point(i))
			last = i
		}
	}
	return out
}
