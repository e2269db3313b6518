package policy

import (
	"math"
	"sync"
	"time"
)

// Latency-model constants.
const (
	// fitDecay is how much of its weight an observation keeps per newer
	// one, so the fit follows a worker whose speed changes.
	fitDecay = 0.95
	// scoreOutputTokens is the answer length the score assumes:
	// predicted TTFT + this × predicted TPOT.
	scoreOutputTokens = 128
	// nearBest is how far above the best predicted score a candidate may
	// be and still count as equally good: predictions are estimates, and
	// always taking the single best would pile every request on one worker.
	nearBest = 1.25
)

// SLO is a request's latency objective (zero fields: none), read from the
// x-slo-ttft-ms and x-slo-tpot-ms headers.
type SLO struct {
	TTFT, TPOT time.Duration
}

// Observation is a worker's recent mean latencies and the load it carried
// meanwhile (in-flight plus queued requests), which predicted_latency fits.
type Observation struct {
	Load       float64
	TTFT, TPOT time.Duration
}

// Observer is implemented by policies that learn from observed latencies;
// the router feeds each target's observations (router/latency.go).
type Observer interface {
	Observe(id string, o Observation)
}

// SLOStats counts predicted_latency's decisions for requests with an SLO.
type SLOStats struct {
	Met      uint64 // a candidate was predicted to meet the SLO
	Missed   uint64 // none was: sent to the best anyway (deprioritised)
	Refused  uint64 // none was: refused (Params.SLORefuse)
	Unscored uint64 // no latency observed yet: sent to the least loaded
}

// predictedLatency predicts each candidate's TTFT and TPOT for the request
// and picks the best.
//
// Model: per target, two weighted least-squares lines fitted online with
// exponential forgetting, TTFT and TPOT against its load (in-flight +
// queued requests); a target with no observation uses the
// fit over all targets. A line seen at one load only cannot tell its slope;
// then latency is taken as proportional to 1 + load (each request ahead
// costs the same); so is a line whose fitted slope is negative, which only
// noise can make. The prediction for a candidate is at its load plus this
// request.
//
// Rule: a request with an SLO goes to the least-loaded candidate among
// those predicted to meet both objectives (the most headroom; ties to the
// lower predicted TTFT), so feasible requests spread instead of piling on
// the one worker predicted fastest; when none
// is, it is refused with Params.SLORefuse (Pick reports false) and
// otherwise sent to the best predicted score anyway (deprioritised). A
// request without SLO goes to the best predicted score, TTFT + 128 × TPOT.
// "Best" is the least-loaded candidate whose score is within 1.25× of the
// lowest (then the lower score, then the first). Before any observation
// the least-loaded candidate wins. Each case is counted (SLOStats).
type predictedLatency struct {
	refuse bool

	mu     sync.Mutex
	ttft   map[string]*lineFit
	tpot   map[string]*lineFit
	allTTF lineFit
	allTPT lineFit
	stats  SLOStats
}

var (
	_ Policy   = (*predictedLatency)(nil)
	_ Needer   = (*predictedLatency)(nil)
	_ Observer = (*predictedLatency)(nil)
)

func newPredictedLatency(p Params) *predictedLatency {
	return &predictedLatency{refuse: p.SLORefuse, ttft: map[string]*lineFit{}, tpot: map[string]*lineFit{}}
}

func (*predictedLatency) Name() string { return PredictedLatency }

// Needs reports that predicted_latency reads the request's SLO and learns
// from observed latencies.
func (*predictedLatency) Needs() Needs { return Needs{SLO: true, Latency: true} }

// Observe adds a target's observation to its fits and the pooled ones.
func (p *predictedLatency) Observe(id string, o Observation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range []struct {
		m map[string]*lineFit
		y time.Duration
	}{{p.ttft, o.TTFT}, {p.tpot, o.TPOT}} {
		if f.y <= 0 {
			continue
		}
		if f.m[id] == nil {
			f.m[id] = &lineFit{}
		}
		f.m[id].add(o.Load, f.y.Seconds())
	}
	if o.TTFT > 0 {
		p.allTTF.add(o.Load, o.TTFT.Seconds())
	}
	if o.TPOT > 0 {
		p.allTPT.add(o.Load, o.TPOT.Seconds())
	}
}

// Stats returns the SLO decision counts so far.
func (p *predictedLatency) Stats() SLOStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *predictedLatency) Pick(req Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hasSLO := req.SLO.TTFT > 0 || req.SLO.TPOT > 0
	pr, ok := p.predictAll(cands)
	if !ok {
		// Nothing observed anywhere yet: least loaded.
		if hasSLO {
			p.stats.Unscored++
		}
		return Decision{Index: leastLoadedIndex(cands)}, true
	}
	feasible := -1
	var feasibleTTFT float64
	for i, c := range cands {
		ttft, tpot := pr.ttft[i], pr.tpot[i]
		meets := (req.SLO.TTFT <= 0 || ttft <= req.SLO.TTFT.Seconds()) && (req.SLO.TPOT <= 0 || tpot <= req.SLO.TPOT.Seconds())
		if hasSLO && meets && (feasible < 0 || c.Load() < cands[feasible].Load() || c.Load() == cands[feasible].Load() && ttft < feasibleTTFT) {
			feasible, feasibleTTFT = i, ttft
		}
	}
	d, ok := p.decide(hasSLO, feasible, nearBestIndex(cands, pr.score))
	if req.Explain {
		d.Explained = pr.explain()
	}
	return d, ok
}

// decide counts and returns the choice: best without an SLO, else the
// feasible candidate, else a refusal or best (deprioritised).
func (p *predictedLatency) decide(hasSLO bool, feasible, best int) (Decision, bool) {
	switch {
	case !hasSLO:
		return Decision{Index: best}, true
	case feasible >= 0:
		p.stats.Met++
		return Decision{Index: feasible, Outcome: OutcomeSLOMet}, true
	case p.refuse:
		p.stats.Refused++
		return Decision{Outcome: OutcomeSLORefused}, false
	}
	p.stats.Missed++
	return Decision{Index: best, Outcome: OutcomeSLOMissed}, true
}

// explain is each candidate's predicted TTFT, TPOT and score (seconds).
func (pr predictions) explain() []Explained {
	out := explained(len(pr.score))
	for i := range out {
		out[i].Scores["ttft_s"], out[i].Scores["tpot_s"], out[i].Scores["score_s"] = pr.ttft[i], pr.tpot[i], pr.score[i]
	}
	return out
}

// predictions are each candidate's predicted TTFT, TPOT (seconds) and
// score, TTFT + 128 × TPOT.
type predictions struct{ ttft, tpot, score []float64 }

// predictAll predicts every candidate at its load plus this request; false
// when nothing was observed yet. The caller holds p.mu.
func (p *predictedLatency) predictAll(cands []Candidate) (predictions, bool) {
	pr := predictions{make([]float64, len(cands)), make([]float64, len(cands)), make([]float64, len(cands))}
	for i, c := range cands {
		ttft, ok1 := p.predict(p.ttft, &p.allTTF, c.ID, float64(c.Load()+1))
		tpot, ok2 := p.predict(p.tpot, &p.allTPT, c.ID, float64(c.Load()+1))
		if !ok1 || !ok2 {
			return predictions{}, false
		}
		pr.ttft[i], pr.tpot[i], pr.score[i] = ttft, tpot, ttft+scoreOutputTokens*tpot
	}
	return pr, true
}

// predict is target id's fit at load x, or the pooled fit's when id has
// none; false when nothing was observed.
func (p *predictedLatency) predict(m map[string]*lineFit, all *lineFit, id string, x float64) (float64, bool) {
	if f := m[id]; f != nil && f.w > 0 {
		return f.at(x), true
	}
	if all.w > 0 {
		return all.at(x), true
	}
	return 0, false
}

// nearBestIndex is the least-loaded candidate whose score is within
// nearBest of the lowest; ties to the lower score, then the first.
func nearBestIndex(cands []Candidate, scores []float64) int {
	lowest := scores[0]
	for _, s := range scores[1:] {
		lowest = min(lowest, s)
	}
	best := -1
	for i, c := range cands {
		if scores[i] > lowest*nearBest {
			continue
		}
		if best < 0 || c.Load() < cands[best].Load() || c.Load() == cands[best].Load() && scores[i] < scores[best] {
			best = i
		}
	}
	return best
}

// leastLoadedIndex is the first candidate with the lowest load.
func leastLoadedIndex(cands []Candidate) int {
	best := 0
	for i, c := range cands {
		if c.Load() < cands[best].Load() {
			best = i
		}
	}
	return best
}

// lineFit is a weighted least-squares line y = a + b·x with exponential
// forgetting.
type lineFit struct{ w, sx, sy, sxx, sxy float64 }

func (f *lineFit) add(x, y float64) {
	f.w, f.sx, f.sy, f.sxx, f.sxy = fitDecay*f.w+1, fitDecay*f.sx+x, fitDecay*f.sy+y, fitDecay*f.sxx+x*x, fitDecay*f.sxy+x*y
}

// at is the line's value at x, never below zero. Without spread in x the
// slope is unknown, and a negative one is noise: then latency is scaled by
// (1+x)/(1+mean x).
func (f *lineFit) at(x float64) float64 {
	mx, my := f.sx/f.w, f.sy/f.w
	varx := f.sxx/f.w - mx*mx
	if varx < 1e-9 {
		return my * (1 + x) / (1 + mx)
	}
	b := (f.sxy/f.w - mx*my) / varx
	if b < -1e-12 { // below rounding error: a flat line is not negative

		return my * (1 + x) / (1 + mx)
	}
	return math.Max(0, my+b*(x-mx))
}
