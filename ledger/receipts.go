package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
)

// receipt is what the ledger reads of a request's route receipt (the
// router's JSON, docs/router.md): the chosen candidate and each
// candidate's predicted and held prefix-cache tokens.
type receipt struct {
	Policy     string `json:"policy"`
	Worker     string `json:"worker"`
	Candidates []struct {
		ID        string `json:"id"`
		Predicted *int   `json:"predicted_tokens"`
		Held      *int   `json:"held_tokens"`
	} `json:"candidates"`
}

// Misroute bases: what "the tokens a candidate held" is read from.
const (
	// BasisHeld is the engines' real cache state at the decision (the
	// virtual clock reads it from their KV events at the instant): the
	// same truth for every policy, so rates compare across policies.
	BasisHeld = "held"
	// BasisPredicted is the policy's own prediction per candidate (a real
	// router cannot see the engines): a precise policy judged by its KV
	// events copy, an approximate one by its guess.
	BasisPredicted = "predicted"
)

// RouteFigures are a side's figures from its requests' route receipts.
type RouteFigures struct {
	// Receipts is how many measured requests carry a receipt.
	Receipts int `json:"receipts"`
	// Basis is BasisHeld when every receipt carries each candidate's held
	// tokens, else BasisPredicted ("" without receipts).
	Basis string `json:"basis"`
	// Judged is how many receipts give every candidate a figure on Basis
	// (a policy that predicts nothing, round_robin, is never judged by its
	// predictions). Misrouted requests went to a candidate holding fewer of
	// the prompt's tokens than another candidate did; MisrouteRate is
	// their share of Judged (nil when none is judged).
	Judged       int      `json:"judged"`
	Misrouted    int      `json:"misrouted"`
	MisrouteRate *float64 `json:"misroute_rate"`
	// PredictedHitRate is the chosen candidates' predicted tokens over the
	// prompt tokens, ServedHitRate the servers' cached_tokens over the
	// same, both over the completed requests whose receipt predicts (nil
	// when none does): predicted against served.
	PredictedHitRate *float64 `json:"predicted_hit_rate"`
	ServedHitRate    *float64 `json:"served_hit_rate"`
	// Exact is the share of those requests whose predicted tokens equal
	// the server's cached_tokens.
	Exact *float64 `json:"exact_prediction_rate"`
}

// routeSample is one side's per-request misroute indicators (1 misrouted,
// 0 not; judged requests only) and its figures.
type routeSample struct {
	misrouted []float64
	figures   RouteFigures
}

// RouteFiguresOf computes the figures of one trial's request records.
func RouteFiguresOf(reqs []Request) (RouteFigures, error) {
	s, err := routeSampleOf(reqs)
	return s.figures, err
}

func routeSampleOf(reqs []Request) (routeSample, error) {
	var s routeSample
	var rcs []receipt
	var idx []int
	held := true
	for i, q := range reqs {
		if len(q.Receipt) == 0 {
			continue
		}
		var rc receipt
		if err := json.Unmarshal(q.Receipt, &rc); err != nil {
			return routeSample{}, fmt.Errorf("request %d: reading its receipt: %w", q.Index, err)
		}
		for _, c := range rc.Candidates {
			held = held && c.Held != nil
		}
		rcs, idx = append(rcs, rc), append(idx, i)
	}
	f := &s.figures
	if f.Receipts = len(rcs); f.Receipts == 0 {
		return s, nil
	}
	f.Basis = BasisPredicted
	if held {
		f.Basis = BasisHeld
	}
	var predicted, served, prompt, exact, scored int
	for k, rc := range rcs {
		if chosen, best, ok := rc.tokens(f.Basis); ok {
			m := 0.0
			if chosen < best {
				f.Misrouted++
				m = 1
			}
			s.misrouted = append(s.misrouted, m)
		}
		q := reqs[idx[k]]
		p, pok := rc.predicted()
		if q.Status != RequestOK || !pok {
			continue
		}
		scored++
		predicted, served, prompt = predicted+p, served+q.CachedTokens, prompt+q.InputTokens
		if p == q.CachedTokens {
			exact++
		}
	}
	if f.Judged = len(s.misrouted); f.Judged > 0 {
		rate := float64(f.Misrouted) / float64(f.Judged)
		f.MisrouteRate = &rate
	}
	if scored > 0 && prompt > 0 {
		ph, sh, ex := float64(predicted)/float64(prompt), float64(served)/float64(prompt), float64(exact)/float64(scored)
		f.PredictedHitRate, f.ServedHitRate, f.Exact = &ph, &sh, &ex
	}
	return s, nil
}

// tokens is the chosen candidate's tokens and the most any candidate had,
// by basis; ok is false when a candidate has no figure on it.
func (rc receipt) tokens(basis string) (chosen, best int, ok bool) {
	for _, c := range rc.Candidates {
		v := c.Predicted
		if basis == BasisHeld {
			v = c.Held
		}
		if v == nil {
			return 0, 0, false
		}
		best = max(best, *v)
		if c.ID == rc.Worker {
			chosen = *v
		}
	}
	return chosen, best, true
}

// predicted is the chosen candidate's predicted tokens.
func (rc receipt) predicted() (int, bool) {
	for _, c := range rc.Candidates {
		if c.ID == rc.Worker && c.Predicted != nil {
			return *c.Predicted, true
		}
	}
	return 0, false
}

// RouteComparison is both sides' receipt figures.
type RouteComparison struct {
	A RouteFigures `json:"a"`
	B RouteFigures `json:"b"`
}

// routes reads a side's receipts (every trial of it, pooled).
func (l *Ledger) routes(ctx context.Context, s Side) (routeSample, error) {
	var all []Request
	for _, id := range s.IDs {
		reqs, err := l.Requests(ctx, id)
		if err != nil {
			return routeSample{}, err
		}
		all = append(all, reqs...)
	}
	return routeSampleOf(all)
}

// compareRoutes adds the sides' receipt figures to c and, when both sides
// have receipts on the same basis, a bootstrap interval on the
// difference of their misroute rates (an Interval "misroute_rate": lower
// is better).
func (l *Ledger) compareRoutes(ctx context.Context, c *Comparison) error {
	a, err := l.routes(ctx, c.A)
	if err != nil {
		return err
	}
	b, err := l.routes(ctx, c.B)
	if err != nil {
		return err
	}
	if a.figures.Receipts == 0 && b.figures.Receipts == 0 {
		return nil
	}
	c.Routes = &RouteComparison{A: a.figures, B: b.figures}
	if len(a.misrouted) == 0 || len(b.misrouted) == 0 || a.figures.Basis != b.figures.Basis {
		return nil
	}
	// Its own stream, after the latency intervals' (streams 0 and 1).
	rng := rand.New(rand.NewPCG(c.Seed, 2))
	lo, hi := bootstrapMeanDiff(a.misrouted, b.misrouted, c.Resamples, c.Confidence, rng)
	ra, rb := *a.figures.MisrouteRate, *b.figures.MisrouteRate
	iv := Interval{Metric: "misroute_rate", A: ra, B: rb, Diff: rb - ra, Lo: lo, Hi: hi, NA: len(a.misrouted), NB: len(b.misrouted)}
	iv.Significant = lo > 0 || hi < 0
	if iv.Significant {
		iv.Better = "A"
		if hi < 0 {
			iv.Better = "B"
		}
	}
	c.Intervals = append(c.Intervals, iv)
	return nil
}

// bootstrapMeanDiff is a percentile-bootstrap interval on mean(b) −
// mean(a), both resampled independently.
func bootstrapMeanDiff(a, b []float64, resamples int, confidence float64, rng *rand.Rand) (lo, hi float64) {
	mean := func(x []float64) float64 {
		sum := 0.0
		for range x {
			sum += x[rng.IntN(len(x))]
		}
		return sum / float64(len(x))
	}
	diffs := make([]float64, resamples)
	for i := range diffs {
		diffs[i] = mean(b) - mean(a)
	}
	slices.Sort(diffs)
	tail := (1 - confidence) / 2
	return percentile(diffs, tail), percentile(diffs, 1-tail)
}
