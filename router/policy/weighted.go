package policy

import "fmt"

// Scorer names for the weighted policy.
const (
	ScorerPrefix           = "prefix"            // approximate: the blocks the router sent each target
	ScorerPrecisePrefix    = "precise_prefix"    // the blocks each target's KV events say it holds
	ScorerLoad             = "load"              // fewer in-flight plus queued requests
	ScorerPredictedLatency = "predicted_latency" // lower predicted TTFT + 128 × TPOT
)

// ScorerNames lists the scorers the weighted policy knows.
func ScorerNames() []string {
	return []string{ScorerPrefix, ScorerPrecisePrefix, ScorerLoad, ScorerPredictedLatency}
}

// Scorer is one term of the weighted policy's sum.
type Scorer struct {
	Name   string
	Weight float64
}

// weighted (policy "weighted", scorers from Params.Scorers or
// DefaultScorers) scores every candidate with each configured scorer, each score
// in [0, 1] (1 best), and picks the highest weighted sum, as llm-d's
// scheduler combines its scorers. Prefix scorers give the share of the
// prompt's reusable blocks the candidate holds; load gives 1 for the least
// and 0 for the most loaded candidate (1 for all when equal);
// predicted_latency likewise over predicted TTFT + 128 × TPOT (1 for all
// before anything was observed). Ties go to the lower load, then the first
// candidate. The prompt's blocks are recorded under the chosen target for
// the approximate prefix scorer, and its precise match is the decision's
// MatchedTokens.
type weighted struct {
	scorers []Scorer
	prefix  *precisePrefix    // block keys, KV-event index and the router's record
	latency *predictedLatency // fits fed through Observe
}

var (
	_ Policy    = (*weighted)(nil)
	_ Needer    = (*weighted)(nil)
	_ Forgetter = (*weighted)(nil)
	_ Observer  = (*weighted)(nil)
)

// DefaultScorers are the weighted policy's terms when none are given: the
// KV-event prefix match and the load, equally.
func DefaultScorers() []Scorer {
	return []Scorer{{ScorerPrecisePrefix, 1}, {ScorerLoad, 1}}
}

func newWeighted(p Params) (*weighted, error) {
	if len(p.Scorers) == 0 {
		p.Scorers = DefaultScorers()
	}
	for _, s := range p.Scorers {
		if !containsName(ScorerNames(), s.Name) {
			return nil, fmt.Errorf("policy %s: unknown scorer %q (known: %v)", Weighted, s.Name, ScorerNames())
		}
		if !(s.Weight > 0) {
			return nil, fmt.Errorf("policy %s: scorer %s: weight must be > 0, got %g", Weighted, s.Name, s.Weight)
		}
	}
	return &weighted{scorers: p.Scorers, prefix: newPrecisePrefix(p), latency: newPredictedLatency(p)}, nil
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func (*weighted) Name() string { return Weighted }

// Needs reports the prompt text when a prefix scorer is configured and
// observed latencies with the predicted_latency scorer.
func (w *weighted) Needs() Needs {
	var n Needs
	for _, s := range w.scorers {
		n.Text = n.Text || s.Name == ScorerPrefix || s.Name == ScorerPrecisePrefix
		n.Latency = n.Latency || s.Name == ScorerPredictedLatency
	}
	return n
}

func (w *weighted) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	w.prefix.mu.Lock()
	defer w.prefix.mu.Unlock()
	total := make([]float64, len(cands))
	var precise, approx *prefixMatch
	var ex []Explained
	if req.Explain {
		ex = explained(len(cands))
	}
	for _, s := range w.scorers {
		var part []float64
		switch s.Name {
		case ScorerPrefix, ScorerPrecisePrefix:
			m := w.prefix.match(req, cands, s.Name == ScorerPrecisePrefix)
			if s.Name == ScorerPrecisePrefix {
				precise = &m
			} else {
				approx = &m
			}
			part = make([]float64, len(cands))
			for i, n := range m.blocks {
				if len(m.keys) > 0 {
					part[i] = float64(n) / float64(len(m.keys))
				}
			}
		case ScorerLoad:
			part = make([]float64, len(cands))
			for i, c := range cands {
				part[i] = float64(c.Load())
			}
			part = lowIsBest(part)
		case ScorerPredictedLatency:
			w.latency.mu.Lock()
			pr, ok := w.latency.predictAll(cands)
			w.latency.mu.Unlock()
			if !ok {
				pr.score = make([]float64, len(cands)) // nothing observed: all equal
			}
			part = lowIsBest(pr.score)
		}
		for i := range total {
			total[i] += s.Weight * part[i]
		}
		for i := range ex {
			ex[i].Scores[s.Name] = part[i]
		}
	}
	best := 0
	for i, c := range cands {
		if total[i] > total[best] || total[i] == total[best] && c.Load() < cands[best].Load() {
			best = i
		}
	}
	d := Decision{Index: best, Explained: ex}
	m := precise
	if m == nil {
		m = approx
	}
	if m != nil {
		w.prefix.chose(*m, cands, &d)
	}
	for i := range ex {
		ex[i].Scores["total"] = total[i]
		if m != nil {
			ex[i].Matched, ex[i].Approx = m.blocks[i]*m.bs, m.approx[i]
		}
	}
	return d, true
}

// lowIsBest maps values to [0, 1]: 1 for the lowest, 0 for the highest,
// 1 for all when they are equal.
func lowIsBest(v []float64) []float64 {
	lo, hi := v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = 1
		if hi > lo {
			out[i] = (hi - x) / (hi - lo)
		}
	}
	return out
}

// Observe feeds the predicted_latency scorer.
func (w *weighted) Observe(id string, o Observation) { w.latency.Observe(id, o) }

// Forget drops the router's record of what it sent a target.
func (w *weighted) Forget(id string) { w.prefix.Forget(id) }
