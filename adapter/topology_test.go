package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Acceptance 2: a prefill=2, decode=6 trial runs end to end through the
// router's PD mode and writes a quality-gated row: every request went
// through both legs and the answers match the collocated reference.
func TestPDTrialEndToEnd(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	out := runOK(t, r, parseSpec(t, `
name: pd-small
seed: 9
target: {kind: sim, profile: fast}
topology:
  prefill: 2
  decode: 6
  engine: {model: sim-m, max_num_seqs: 64}
router:
  pd_disaggregation: true
  prefill_policy: round_robin
  decode_policy: least_loaded
  kv_connector: nixl
workload:
  kind: random
  input_len: 256
  output_len: 16
  num_prompts: 48
  arrival: {kind: poisson, request_rate: 100}
warmup: {requests: 12}
gate: {reference: sim, prompts: 4}
`)[0])
	if out.Gate == nil || !out.Gate.Passed || out.Gate.KLMean != 0 || out.Gate.TokenMismatch != 0 {
		t.Fatalf("gate %+v: disaggregated answers must equal the reference's", out.Gate)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Prefill != 2 || row.Decode != 6 || row.GatePassed == nil || !*row.GatePassed || row.Completed != 48 {
		t.Fatalf("row: prefill %d decode %d gate %v completed %d", row.Prefill, row.Decode, row.GatePassed, row.Completed)
	}
	requireZeroLoads(t, row.FinalLoads)
	if len(row.FinalLoads) != 8 {
		t.Errorf("final loads cover %d workers, want all 8 of both pools", len(row.FinalLoads))
	}
	// Every request took the prefill leg, and round_robin split those legs
	// evenly: warm-up, measured and gate requests, 12+48+4 = 64 over 2.
	var cfg struct {
		PD      bool     `json:"pd_disaggregation"`
		Prefill []string `json:"prefill"`
		Decode  []string `json:"decode"`
	}
	if err := json.Unmarshal(row.RouterConfig, &cfg); err != nil || !cfg.PD || len(cfg.Prefill) != 2 || len(cfg.Decode) != 6 {
		t.Fatalf("router config on the row: %s (%v)", row.RouterConfig, err)
	}
	for _, u := range cfg.Prefill {
		if got := row.PolicyDecisions[u]; got != 32 {
			t.Errorf("prefill worker %s: %v decisions, want 32", u, got)
		}
	}
	decode := 0.0
	for _, u := range cfg.Decode {
		decode += row.PolicyDecisions[u]
	}
	if decode != 64 {
		t.Errorf("decode legs: %v, want 64", decode)
	}
	// Over the measured window only, every measured request's KV was pulled
	// once by a decode engine: 48, not the 64 of warm-up and gate included.
	if row.KVTransfers == nil || *row.KVTransfers != 48 || row.KVTransferFailures == nil || *row.KVTransferFailures != 0 {
		t.Errorf("KV transfers %v, failed %v; want 48 and 0", deref(row.KVTransfers), deref(row.KVTransferFailures))
	}
}

// With data_parallel_size 2 the simulated engine serves two ranks behind
// one port and the router (intra_node_data_parallel_size following the
// engine) addresses each rank: round_robin spreads over all four.
func TestDataParallelRanksThroughTheRouter(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "max_num_seqs: 32}", "max_num_seqs: 32, data_parallel_size: 2}", 1)
	tr := parseSpec(t, spec)[0]
	if tr.Router.IntraNodeDataParallelSize != 2 {
		t.Fatalf("router.intra_node_data_parallel_size = %d, want it to follow the engine's 2", tr.Router.IntraNodeDataParallelSize)
	}
	out := runOK(t, r, tr)
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if len(row.PolicyDecisions) != 4 {
		t.Fatalf("decisions over %d targets %v, want 2 workers × 2 ranks", len(row.PolicyDecisions), row.PolicyDecisions)
	}
	for target, n := range row.PolicyDecisions {
		if !strings.Contains(target, "@") || n == 0 {
			t.Errorf("target %q got %v decisions, want a url@rank target with traffic", target, n)
		}
	}
	requireZeroLoads(t, row.FinalLoads)
}
