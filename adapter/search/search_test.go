package search_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/search"
	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

const spec = `
seed: 3
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 2, engine: {model: sim-llama-3-8b}}
router: {policy: round_robin}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: 30, arrival: {kind: poisson, request_rate: 20}}
warmup: {requests: 2}
slo: {ttft_ms: 500}
search:
  space:
    router.policy: [round_robin, cache_aware]
    topology.engine.max_num_seqs: {from: 16, to: 32, step: 16}
  variants:
    - name: c2
    - name: c1
      topology.replicas: 1
    - {name: 1p1d, topology: {prefill: 1, decode: 1}, router: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: cache_aware, kv_connector: nixl}}
  constraints:
    gpus: 2
    slo: ["p99_ttft_ms <= 1000"]
  objective:
    %s
`

func candidates(t *testing.T, objective string) (search.Spec, []trials.Trial) {
	t.Helper()
	return splitParse(t, strings.Replace(spec, "%s", objective, 1), "t")
}

// splitParse reads a search spec as the search command does: the search
// block apart, the rest as trials on the virtual clock.
func splitParse(t testing.TB, text, stem string) (search.Spec, []trials.Trial) {
	t.Helper()
	data, s, err := search.Split([]byte(text), stem)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trials.Parse(data, targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	if err := trials.SetClock(ts, trials.ClockVirtual, "search"); err != nil {
		t.Fatal(err)
	}
	return s, ts
}

// TestSearchRunsResumesAndRanks runs a 12-combination space (3 variants x
// 2 policies x 2 max_num_seqs): one replica runs no router and PD ignores
// router.policy, so their duplicates count once; the 1-replica variant
// (2 configurations) is outside the GPU budget; 6 candidates run as
// virtual rows of one search id. The top table is
// ordered by the objective; a resumed search runs nothing again and ranks
// the same rows.
func TestSearchRunsResumesAndRanks(t *testing.T) {
	s, ts := candidates(t, "maximize: output_throughput_per_gpu")
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run, over, err := search.Run(context.Background(), s, ts, search.Options{Ledger: l, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(run) != 6 || len(over) != 2 {
		t.Fatalf("%d candidates run, %d over budget; want 6 and 2", len(run), len(over))
	}
	for _, c := range run {
		if c.RowID == 0 || c.Status != ledger.StatusOK || c.GPUs != 2 || c.Resumed {
			t.Fatalf("candidate %s: row %d status %s gpus %d resumed %v", c.Trial.Name, c.RowID, c.Status, c.GPUs, c.Resumed)
		}
		row, err := l.Get(context.Background(), c.RowID)
		if err != nil {
			t.Fatal(err)
		}
		if !row.Virtual() || row.SweepID != ts[0].SweepID {
			t.Fatalf("row %d: clock %q sweep %q, want virtual of search %s", row.ID, row.Clock, row.SweepID, ts[0].SweepID)
		}
		if got, want := c.Values["output_throughput_per_gpu"], row.OutputThroughput/2; got != want {
			t.Fatalf("output_throughput_per_gpu %v, want %v", got, want)
		}
	}
	r := search.Rank(s, run)
	if len(r.Top) != 6 {
		t.Fatalf("top has %d, want all 6 feasible", len(r.Top))
	}
	for i := 1; i < len(r.Top); i++ {
		if r.Top[i].Values["output_throughput_per_gpu"] > r.Top[i-1].Values["output_throughput_per_gpu"] {
			t.Fatalf("top not ordered: %d beats %d", i, i-1)
		}
	}
	again, _, err := search.Run(context.Background(), s, ts, search.Options{Ledger: l, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range again {
		if !c.Resumed || c.RowID != run[i].RowID {
			t.Fatalf("resumed candidate %s: row %d resumed %v, want row %d resumed", c.Trial.Name, c.RowID, c.Resumed, run[i].RowID)
		}
	}
	if rows, _ := l.List(context.Background(), ledger.Filter{IncludeVirtual: true, IncludeStale: true}); len(rows) != 6 {
		t.Fatalf("ledger has %d rows after resuming, want 6", len(rows))
	}
}

// TestSearchFrontAndInfeasible: a Pareto objective gives a front no
// member of which another beats on both metrics; an SLO no candidate meets
// leaves none feasible.
func TestSearchFrontAndInfeasible(t *testing.T) {
	s, ts := candidates(t, "pareto: [p99_ttft_ms, output_throughput]")
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run, _, err := search.Run(context.Background(), s, ts, search.Options{Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	r := search.Rank(s, run)
	if len(r.Front) == 0 || len(r.Top) != 0 {
		t.Fatalf("front %d, top %d: want a front and no top table", len(r.Front), len(r.Top))
	}
	for _, f := range r.Front {
		for _, c := range run {
			if c.Values["p99_ttft_ms"] < f.Values["p99_ttft_ms"] && c.Values["output_throughput"] > f.Values["output_throughput"] {
				t.Fatalf("%s dominates front member %s", c.Trial.Name, f.Trial.Name)
			}
		}
	}
	s.Constraints.SLO = []string{"p99_ttft_ms < 0.001"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	run, _, err = search.Run(context.Background(), s, ts, search.Options{Ledger: l, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := search.Rank(s, run); r.Infeasible != len(run) || len(r.Front) != 0 {
		t.Fatalf("infeasible %d of %d, front %d: want every candidate infeasible", r.Infeasible, len(run), len(r.Front))
	}
}

// TestSplitRefusesBadBlocks: each problem names its key.
func TestSplitRefusesBadBlocks(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"name: x\nsearch: {objective: {maximize: output_throughput}, bogus: 1}", "field bogus not found"},
		{"name: x\nsearch: {objective: {}}", "search.objective: set exactly one"},
		{"name: x\nsearch: {objective: {maximize: nope_per_gpu}}", "search.objective.maximize"},
		{"name: x\nsearch: {objective: {pareto: [p99_ttft_ms]}}", "search.objective.pareto: want two metrics"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, constraints: {gpus: -1, slo: [\"x <\"]}}", "search.constraints.gpus"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, constraints: {slo: [\"p99_ttft_ms <\"]}}", "search.constraints.slo[0]"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, space: {topology.replicas: {from: 4, to: 1, step: 1}}}", "search.space.topology.replicas"},
		{"name: x\nmatrix: {router.policy: [a]}\nsearch: {objective: {maximize: output_throughput}, space: {topology.replicas: [1]}}", "search.space: the spec also has a matrix"},
		{"name: x\n", "the spec has no search block"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, strategy: bayes}", "search.strategy: must be grid or halving"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, halving: {eta: 2}}", "search.halving: set with strategy grid"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, strategy: halving, halving: {eta: 1}}", "search.halving.eta: must be >= 2"},
		{"name: x\nsearch: {objective: {maximize: output_throughput}, strategy: halving, halving: {min_fraction: 1.5}}", "search.halving.min_fraction: must be in (0, 1)"},
	} {
		_, _, err := search.Split([]byte(c.spec), "x")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.spec, err, c.want)
		}
	}
}
