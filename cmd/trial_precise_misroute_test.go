package cmd

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// Issue 31's acceptance 2 through trial run and ledger compare: the
// example precise-vs-approx.yaml runs cache_aware and precise_prefix on
// the repository's Mooncake-format sample trace over four engines with
// tight KV (virtual clock, whose engines' real cache state every receipt
// records). Every measured request has a route receipt;
// precise_prefix's misroute rate is lower than cache_aware's with the
// comparison's bootstrap interval excluding zero; its predicted hits are
// what the servers served (cached_tokens) for nearly every request, while
// cache_aware's guesses overshoot what was served.
func TestPrecisePrefixMisroutesLessOnMooncakeTrace(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ledger.db")
	spec := filepath.Join("..", "trials", "examples", "precise-vs-approx.yaml")
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", db); code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := run(t, "ledger", "compare", "precise-vs-approx/router.policy=cache_aware",
		"precise-vs-approx/router.policy=precise_prefix", "--ledger", db, "--output", "json")
	if code != ExitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errs)
	}
	var got struct {
		Routes    *ledger.RouteComparison `json:"routes"`
		Intervals []ledger.Interval       `json:"intervals"`
		A         struct{ Requests int }  `json:"a"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := got.Routes
	if r == nil || r.A.Judged != got.A.Requests || r.B.Judged != got.A.Requests || r.A.Basis != ledger.BasisHeld || r.B.Basis != ledger.BasisHeld {
		t.Fatalf("routes %+v: want a receipt with held tokens on each of the %d requests per side", r, got.A.Requests)
	}
	var iv *ledger.Interval
	for i := range got.Intervals {
		if got.Intervals[i].Metric == "misroute_rate" {
			iv = &got.Intervals[i]
		}
	}
	if iv == nil {
		t.Fatalf("no misroute_rate interval in %+v", got.Intervals)
	}
	t.Logf("misroute rate cache_aware %.3f (%d), precise_prefix %.3f (%d), diff %.3f [%.3f, %.3f]; hit predicted/served: cache_aware %.3f/%.3f, precise_prefix %.3f/%.3f (exact %.3f)",
		*r.A.MisrouteRate, r.A.Misrouted, *r.B.MisrouteRate, r.B.Misrouted, iv.Diff, iv.Lo, iv.Hi,
		*r.A.PredictedHitRate, *r.A.ServedHitRate, *r.B.PredictedHitRate, *r.B.ServedHitRate, *r.B.Exact)
	if !(*r.B.MisrouteRate < *r.A.MisrouteRate) || !(iv.Hi < 0) || iv.Better != "B" {
		t.Errorf("misroute_rate interval %+v: want precise_prefix (B) lower with the interval below zero", *iv)
	}
	if *r.B.Exact < 0.95 || *r.A.PredictedHitRate <= *r.A.ServedHitRate {
		t.Errorf("precise_prefix predicted its hit exactly on %.3f of requests (want >= 0.95); cache_aware predicted %.3f against %.3f served (want an overshoot)",
			*r.B.Exact, *r.A.PredictedHitRate, *r.A.ServedHitRate)
	}
}
