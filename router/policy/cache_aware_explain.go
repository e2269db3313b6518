package policy

import "github.com/autoinfer/autoinfer/target/tokenizer"

// explain is each candidate's part of cache_aware's receipt: the share of
// the text its tree says the candidate holds ("match_rate", what the
// threshold is compared with) and, as the predicted hit, the full blocks
// of the tokens of that matched text (the simulator's tokenizer, vLLM's
// default block size, the blocks an engine may reuse). The caller holds
// p.mu, before the text is inserted.
func (p *cacheAware) explain(req Request, cands []Candidate) []Explained {
	out := explained(len(cands))
	chars := p.tree.matchEach(req.Model, req.Text, p.epoch, len(cands))
	tokens := -1             // the prompt's reusable tokens, once needed
	matched := map[int]int{} // tokens per matched length (candidates often share one)
	for i, n := range chars {
		rate := 0.0
		if len(req.Text) > 0 {
			rate = float64(n) / float64(len(req.Text))
		}
		out[i].Scores["match_rate"] = rate
		out[i].Matched = 0
		if n == 0 {
			continue
		}
		if tokens < 0 {
			tokens = max(tokenizer.Count(req.Text)-1, 0) / defaultBlockSize * defaultBlockSize
		}
		m, ok := matched[n]
		if !ok {
			m = min(tokenizer.Count(req.Text[:n])/defaultBlockSize*defaultBlockSize, tokens)
			matched[n] = m
		}
		out[i].Matched = m
	}
	return out
}

// matchEach walks text down the model's tree and returns, per candidate
// index (tenants marked with epoch), how many leading characters that
// candidate holds: the depth of the deepest node on the path it holds.
func (t *radix) matchEach(model, text string, epoch uint64, n int) []int {
	out := make([]int, n)
	cur := t.roots[model]
	for depth := 0; cur != nil && depth < len(text); {
		_, c := cur.child(text[depth])
		if c == nil {
			break
		}
		k := commonPrefix(c.edge, text[depth:])
		for _, e := range c.entries {
			if e.t.epoch == epoch {
				out[e.t.cand] = depth + k
			}
		}
		if k < len(c.edge) {
			break
		}
		depth += k
		cur = c
	}
	return out
}
