package gate

import "math"

// position is the top-k logprob distribution at one output position,
// keyed by token text as the OpenAI completions API reports it.
type position map[string]float64

// klTopK returns KL(P‖Q) between a reference position P and a candidate
// position Q, each known only on its own top-k tokens.
//
// Both are evaluated on the union of their top-k sets. A token one side did
// not report ranked below everything it did report, so it gets half of that
// side's smallest reported probability; each side is then renormalised over
// the union. Identical positions give exactly 0, and disjoint ones a clearly
// positive value even at k = 1.
func klTopK(p, q position) float64 {
	if len(p) == 0 && len(q) == 0 {
		return 0
	}
	union := make([]string, 0, len(p)+len(q))
	for tok := range p {
		union = append(union, tok)
	}
	for tok := range q {
		if _, ok := p[tok]; !ok {
			union = append(union, tok)
		}
	}
	pv, qv := probs(p, union), probs(q, union)
	kl := 0.0
	for i := range union {
		if pv[i] > 0 {
			kl += pv[i] * (math.Log(pv[i]) - math.Log(qv[i]))
		}
	}
	return max(kl, 0) // rounding can leave -1e-17
}

// probs returns d's probabilities on support, renormalised, with unreported
// tokens at half d's smallest reported probability.
func probs(d position, support []string) []float64 {
	floor := math.Inf(1)
	for _, lp := range d {
		floor = min(floor, lp)
	}
	if math.IsInf(floor, 1) {
		floor = -100 // nothing reported: everything equally unlikely
	}
	missing := math.Exp(floor) / 2
	out := make([]float64, len(support))
	sum := 0.0
	for i, tok := range support {
		if lp, ok := d[tok]; ok {
			out[i] = math.Exp(lp)
		} else {
			out[i] = missing
		}
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// promptKL is the mean KL over the positions both answers have. Positions
// past the shorter answer are not compared; the caller counts length
// mismatches separately.
func promptKL(ref, cand []position) float64 {
	n := min(len(ref), len(cand))
	if n == 0 {
		return 0
	}
	total := 0.0
	for i := range n {
		total += klTopK(ref[i], cand[i])
	}
	return total / float64(n)
}
