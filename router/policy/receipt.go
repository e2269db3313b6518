package policy

import "github.com/autoinfer/autoinfer/target/tokenizer"

// Receipt is why a request went where it went: every candidate the policy
// compared, with the scores it compared them on and the prompt tokens it
// predicted each would serve from its prefix cache. The router builds it in
// its one decision path (Pool.pick) from the policy's Decision, under both
// clocks, when the request asks for one (Request.Explain). Its JSON is what
// the ledger stores per request (docs/router.md, "Route receipts").
type Receipt struct {
	Policy string `json:"policy"`
	// Worker is the chosen candidate's id ("url" or "url@rank").
	Worker  string `json:"worker"`
	Outcome string `json:"outcome,omitempty"`
	// Candidates are in the order the policy saw them (sorted by id).
	Candidates []ReceiptCandidate `json:"candidates"`
}

// ReceiptCandidate is one candidate of a Receipt.
type ReceiptCandidate struct {
	ID string `json:"id"`
	// InFlight and Queue are the load the policy saw.
	InFlight int64 `json:"in_flight"`
	Queue    int64 `json:"queue,omitempty"`
	// Scores are the policy's own figures, by name (a weighted policy:
	// each scorer's term in [0, 1] and their weighted "total").
	Scores map[string]float64 `json:"scores,omitempty"`
	// Predicted is the prompt tokens the policy predicted the candidate
	// serves from its prefix cache; nil when the policy predicts none.
	Predicted *int `json:"predicted_tokens,omitempty"`
	// Approx: the prediction came from what the router sent the candidate,
	// not from its KV events (precise_prefix on a stale event stream).
	Approx bool `json:"approx,omitempty"`
	// Held is the prompt tokens the candidate's engine really held in its
	// GPU prefix cache at the decision, where the caller can see engines'
	// caches (the virtual clock); nil otherwise.
	Held *int `json:"held_tokens,omitempty"`
}

// Explained is a policy's per-candidate part of a receipt.
type Explained struct {
	Scores map[string]float64
	// Matched is the predicted prefix-cache hit in tokens; -1: no
	// prediction.
	Matched int
	Approx  bool
}

// explained returns n candidates' parts with no prediction yet.
func explained(n int) []Explained {
	out := make([]Explained, n)
	for i := range out {
		out[i] = Explained{Scores: map[string]float64{}, Matched: -1}
	}
	return out
}

// NewReceipt is the receipt of decision d among cands by the policy named
// name: the candidates' loads and whatever the policy explained.
func NewReceipt(name string, cands []Candidate, d Decision) *Receipt {
	r := &Receipt{Policy: name, Outcome: d.Outcome.String(), Candidates: make([]ReceiptCandidate, len(cands))}
	if d.Index >= 0 && d.Index < len(cands) {
		r.Worker = cands[d.Index].ID
	}
	for i, c := range cands {
		rc := ReceiptCandidate{ID: c.ID, InFlight: c.InFlight, Queue: c.Queue}
		if i < len(d.Explained) {
			e := d.Explained[i]
			if len(e.Scores) > 0 {
				rc.Scores = e.Scores
			}
			if e.Matched >= 0 {
				rc.Predicted = &e.Matched
			}
			rc.Approx = e.Approx
		}
		r.Candidates[i] = rc
	}
	return r
}

// SetHeld fills every candidate's Held from idx, an index of the engines'
// real cache state, for the prompt text (keyed as precise_prefix keys it:
// the simulator's tokenizer, the index's block size, the blocks an engine
// may reuse): what precise_prefix's own view says the engines hold, which
// adapter/virtual's TestEngineHeldMatchesIndex holds the engines' own
// count (SetHeldBy, the virtual clock's receipts) to.
func (r *Receipt) SetHeld(idx *BlockIndex, text string) {
	keys, bs := reusableKeys(tokenizer.Tokenize(text), idx.BlockSize())
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	for i := range r.Candidates {
		n, _ := idx.match(r.Candidates[i].ID, keys)
		held := n * bs
		r.Candidates[i].Held = &held
	}
}

// SetHeldBy fills every candidate's Held from held, which gives the
// prompt tokens a candidate's engine holds (by candidate id) as the
// engine itself counts them; a candidate held reports nothing for keeps
// a nil Held.
func (r *Receipt) SetHeldBy(held func(id string) (tokens int, ok bool)) {
	for i := range r.Candidates {
		if n, ok := held(r.Candidates[i].ID); ok {
			r.Candidates[i].Held = &n
		}
	}
}

// reusableKeys are the chained keys of the prompt's full blocks an engine
// may serve from its cache: it always computes the last prompt token, so a
// block ending on it is never a hit.
func reusableKeys(tokens []int, bs int) ([]uint64, int) {
	keys := Keys(tokens, bs)
	if limit := max(len(tokens)-1, 0) / bs; len(keys) > limit {
		keys = keys[:limit]
	}
	return keys, bs
}

// String names an outcome in receipts.
func (o Outcome) String() string {
	switch o {
	case OutcomeCacheHit:
		return "cache_hit"
	case OutcomeCacheMiss:
		return "cache_miss"
	case OutcomeLoadBalance:
		return "load_balance"
	case OutcomeSLOMet:
		return "slo_met"
	case OutcomeSLOMissed:
		return "slo_missed"
	case OutcomeSLORefused:
		return "slo_refused"
	}
	return ""
}
