package workload

import (
	"math"
	"sort"
)

// buildSharedPrefix builds num_groups system prompts, each followed by
// prompts_per_group distinct questions. Without zipf every (group,
// question) pair appears once per pass in a seeded shuffled order, cycling
// when n is larger than their number; with zipf s > 0 each request draws its
// group with probability ∝ 1/rank^s (group 0 the most popular) and a
// question uniformly within the group. With unique_prefixes each request's
// system prompt is its own (same length), so no two share a prefix.
func (b builder) sharedPrefix() ([]Item, error) {
	w, n, src := b.w, b.n, b.src
	total := w.NumGroups * w.PromptsPerGroup
	if n == 0 {
		n = total
	}
	systems := make([]string, w.NumGroups)
	for g := range systems {
		systems[g] = b.tok.Generate(src("group", g), w.SystemPromptLen)
	}
	questions := map[int]string{}
	question := func(k int) string {
		q, ok := questions[k]
		if !ok {
			q = b.tok.Generate(src("question", k), w.QuestionLen)
			questions[k] = q
		}
		return q
	}
	order := src("order", 0)
	var perm []int
	var cdf []float64
	if w.Zipf > 0 {
		cdf = zipfCDF(w.NumGroups, w.Zipf)
	} else {
		perm = order.Perm(total)
	}
	items := make([]Item, n)
	for i := range items {
		var g, q int
		if cdf != nil {
			g = sort.SearchFloat64s(cdf, order.Float64())
			g = min(g, w.NumGroups-1)
			q = order.IntN(w.PromptsPerGroup)
		} else {
			k := perm[i%total]
			g, q = k/w.PromptsPerGroup, k%w.PromptsPerGroup
		}
		it := single(i)
		it.System = systems[g]
		if w.UniquePrefixes {
			it.System = b.tok.Generate(src("unique-group", i), w.SystemPromptLen)
		}
		it.Prompt = question(g*w.PromptsPerGroup + q)
		it.InputTokens = b.tok.Count(join(it.System, it.Prompt))
		it.OutputTokens = w.OutputLen
		items[i] = it
	}
	return items, nil
}

// zipfCDF returns the cumulative probabilities of ranks 1…n under weights
// 1/rank^s. math/rand/v2's Zipf needs s > 1; popularity skews around s = 1
// are the common case, so the CDF is built directly.
func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	sum := 0.0
	for k := range cdf {
		sum += 1 / math.Pow(float64(k+1), s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	return cdf
}
