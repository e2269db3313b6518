package search_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// halvingSpec is an 18-candidate space under load, where max_num_seqs and
// the policy move the tail latency.
const halvingSpec = `
seed: 9
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 2, engine: {model: sim-llama-3-8b}}
router: {policy: round_robin}
workload: {kind: random, input_len: 256, output_len: 64, range_ratio: 0.5, num_prompts: 270, arrival: {kind: poisson, request_rate: 120}}
warmup: {requests: 2}
search:
  space:
    router.policy: [round_robin, cache_aware, power_of_two]
    topology.engine.max_num_seqs: [1, 2, 4, 8, 16, 32]
  objective:
    minimize: p99_e2el_ms
%s
`

func parseSearch(t *testing.T, strategy string) (search.Spec, []trials.Trial) {
	t.Helper()
	return splitParse(t, strings.Replace(halvingSpec, "%s", strategy, 1), "h")
}

// TestHalvingFindsTheGridsBest: successive halving (η 3, from 1/9 of the
// traffic) picks the candidate the exhaustive grid ranks first, with 2
// full-traffic evaluations instead of 18; every evaluation is a virtual
// row of the search id, the shortened ones labelled with their round.
func TestHalvingFindsTheGridsBest(t *testing.T) {
	ctx := context.Background()
	gs, gts := parseSearch(t, "")
	gl, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer gl.Close()
	grun, _, err := search.Run(ctx, gs, gts, search.Options{Ledger: gl, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	grid := search.Rank(gs, grun)
	if len(grun) != 18 || len(grid.Top) == 0 {
		t.Fatalf("grid: %d candidates, top %d", len(grun), len(grid.Top))
	}
	if first, last := grid.Top[0].Values["p99_e2el_ms"], grid.Top[len(grid.Top)-1].Values["p99_e2el_ms"]; !(last > 1.2*first) {
		t.Fatalf("the space does not separate its candidates (p99 E2E %v … %v): the test would prove nothing", first, last)
	}

	hs, hts := parseSearch(t, "  strategy: halving\n  halving: {eta: 3, min_fraction: 0.1111111}")
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rounds []search.Round
	hrun, _, err := search.Run(ctx, hs, hts, search.Options{Ledger: l, Parallel: 2, Round: func(r search.Round) { rounds = append(rounds, r) }})
	if err != nil {
		t.Fatal(err)
	}
	h := search.Rank(hs, hrun)
	if len(h.Top) == 0 || h.Top[0].Trial.Name != grid.Top[0].Trial.Name {
		t.Fatalf("halving's best %v, the grid's %s", h.Top, grid.Top[0].Trial.Name)
	}
	if len(rounds) != 3 || rounds[0].Candidates != 18 || rounds[1].Candidates != 6 || rounds[2].Candidates != 2 || rounds[2].Fraction != 1 {
		t.Fatalf("rounds %+v, want 18 → 6 → 2 candidates, the last on the whole traffic", rounds)
	}
	rows, err := l.List(ctx, ledger.Filter{IncludeVirtual: true, IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, r := range rows {
		if !r.Virtual() || r.SweepID != hts[0].SweepID {
			t.Errorf("row %d %s: clock %s sweep %s, want virtual of search %s", r.ID, r.Name, r.Clock, r.SweepID, hts[0].SweepID)
		}
		if !strings.Contains(r.Name, ",halving=r") {
			full++
			if r.Completed != 270 {
				t.Errorf("full-traffic row %s completed %d, want 270", r.Name, r.Completed)
			}
		} else if strings.Contains(r.Name, "halving=r1@") != (r.Completed == 30) {
			t.Errorf("row %s completed %d (round 1 runs 30 of 270 requests)", r.Name, r.Completed)
		}
	}
	if len(rows) != 18+6+2 || full != 2 {
		t.Errorf("%d rows, %d on the whole traffic; want 26 and 2 (the grid ran 18)", len(rows), full)
	}
	t.Logf("grid best %s (p99 E2E %.1f ms) found with %d full-traffic evaluations of %d", grid.Top[0].Trial.Name, grid.Top[0].Values["p99_e2el_ms"], full, len(grun))
}
