package ledger

import (
	"fmt"
	"testing"
)

// rcpt is a receipt choosing worker among candidates a, b with their
// predicted and (when held is not nil) held tokens.
func rcpt(worker string, pred [2]int, held *[2]int) JSON {
	cand := func(id string, i int) string {
		s := fmt.Sprintf(`{"id":%q,"in_flight":0,"predicted_tokens":%d`, id, pred[i])
		if held != nil {
			s += fmt.Sprintf(`,"held_tokens":%d`, held[i])
		}
		return s + "}"
	}
	return JSON(fmt.Sprintf(`{"policy":"p","worker":%q,"candidates":[%s,%s]}`, worker, cand("a", 0), cand("b", 1)))
}

// A request is misrouted when its worker held fewer tokens than another
// candidate: by the engines' held tokens when every receipt has them,
// else by the policy's predictions. Predicted and served hit rates and the
// exact share come from the completed requests whose receipt predicts.
func TestRouteFigures(t *testing.T) {
	held := func(a, b int) *[2]int { return &[2]int{a, b} }
	reqs := []Request{
		{Index: 0, Status: RequestOK, InputTokens: 100, CachedTokens: 64, Receipt: rcpt("a", [2]int{64, 0}, held(64, 0))},
		{Index: 1, Status: RequestOK, InputTokens: 100, CachedTokens: 0, Receipt: rcpt("a", [2]int{32, 0}, held(0, 48))}, // misrouted
		{Index: 2, Status: "http_503", InputTokens: 100, Receipt: rcpt("b", [2]int{0, 0}, held(16, 0))},                  // misrouted, not served
		{Index: 3, Status: RequestOK, InputTokens: 100, CachedTokens: 5},                                                 // no receipt
	}
	f, err := RouteFiguresOf(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if f.Receipts != 3 || f.Basis != BasisHeld || f.Judged != 3 || f.Misrouted != 2 || *f.MisrouteRate != 2.0/3 {
		t.Errorf("figures %+v: want 3 receipts, basis held, 3 judged, 2 misrouted", f)
	}
	if f.PredictedHitRate == nil || *f.PredictedHitRate != 0.48 || *f.ServedHitRate != 0.32 || *f.Exact != 0.5 {
		t.Errorf("predicted %v served %v exact %v: want 0.48, 0.32, 0.5", *f.PredictedHitRate, *f.ServedHitRate, *f.Exact)
	}
	// Without held tokens on one receipt, the predictions judge: request 1
	// went to the candidate predicted to hold the most.
	reqs[1].Receipt = rcpt("a", [2]int{32, 0}, nil)
	if f, err = RouteFiguresOf(reqs); err != nil || f.Basis != BasisPredicted || f.Judged != 3 || f.Misrouted != 0 {
		t.Errorf("figures %+v (%v): want basis predicted, 3 judged, none misrouted", f, err)
	}
	// A policy that predicts nothing (round_robin) is not judged by
	// predictions: no misroute rate, rather than a rate of zero.
	for i := range 3 {
		reqs[i].Receipt = JSON(`{"policy":"round_robin","worker":"a","candidates":[{"id":"a","in_flight":0},{"id":"b","in_flight":1}]}`)
	}
	if f, err = RouteFiguresOf(reqs); err != nil || f.Judged != 0 || f.MisrouteRate != nil || f.PredictedHitRate != nil {
		t.Errorf("figures %+v (%v): want nothing judged, no rates", f, err)
	}
	reqs[0].Receipt = JSON(`{`)
	if _, err := RouteFiguresOf(reqs); err == nil {
		t.Error("a malformed receipt: want an error")
	}
}
