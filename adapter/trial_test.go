package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// Acceptance 1: on the same shared-prefix trace, cache_aware and
// round_robin give different TTFTs and the ledger says which is better with
// a bootstrap confidence interval.
func TestCacheAwareVersusRoundRobinOnTheSameTrace(t *testing.T) {
	ts := parseSpec(t, `
name: ab
seed: 11
target:
  kind: sim
  profile: fast
  profile_overrides: {prefill_us_per_token: 20}
topology:
  replicas: 2
  engine: {model: sim-m, max_num_seqs: 64, num_gpu_blocks_override: 512}
router: {policy: round_robin}
workload:
  kind: shared_prefix
  num_groups: 12
  prompts_per_group: 8
  system_prompt_len: 1024
  question_len: 32
  output_len: 8
  arrival: {kind: poisson, request_rate: 60}
warmup: {requests: 20}
gate: {reference: none}
matrix:
  router.policy: [round_robin, cache_aware]
`)
	r, led := newTestRunner(t)
	rr, ca := runOK(t, r, ts[0]), runOK(t, r, ts[1])
	if rr.Summary.StreamHash != ca.Summary.StreamHash {
		t.Fatalf("the two policies saw different request streams: %s vs %s", rr.Summary.StreamHash, ca.Summary.StreamHash)
	}
	if ca.PrefixCacheHitRate <= rr.PrefixCacheHitRate {
		t.Errorf("prefix-cache hit rate: cache_aware %.3f, round_robin %.3f; want cache_aware higher", ca.PrefixCacheHitRate, rr.PrefixCacheHitRate)
	}
	cmp, err := led.Compare(context.Background(), strconv.FormatInt(rr.RowID, 10), strconv.FormatInt(ca.RowID, 10), ledger.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, iv := range cmp.Intervals {
		if iv.Metric != "p50_ttft_ms" {
			continue
		}
		found = true
		t.Logf("p50 TTFT: round_robin %.2f ms, cache_aware %.2f ms, diff %+.2f [%+.2f, %+.2f]", iv.A, iv.B, iv.Diff, iv.Lo, iv.Hi)
		if !iv.Significant || iv.Better != "B" {
			t.Errorf("p50_ttft_ms: want cache_aware (B) significantly better, got %+v", iv)
		}
	}
	if !found {
		t.Fatal("compare gave no p50_ttft_ms interval")
	}
	if rr.Summary.P99TTFTMs == ca.Summary.P99TTFTMs {
		t.Error("the two rows have the same p99 TTFT")
	}
}

// Acceptance 3 and 6: changing only the policy marks the earlier row stale
// with a reason naming the change; an identical re-run marks nothing; rows
// carry the router's scrape URL and its per-worker policy decisions.
func TestPolicyChangeMarksEarlierRowsStale(t *testing.T) {
	r, led := newTestRunner(t)
	first := runOK(t, r, parseSpec(t, fmt.Sprintf(tinySpec, "round_robin"))[0])
	second := runOK(t, r, parseSpec(t, fmt.Sprintf(tinySpec, "cache_aware"))[0])
	if len(second.MarkedStale) != 1 || second.MarkedStale[0].ID != first.RowID {
		t.Fatalf("second trial marked %+v stale, want row %d", second.MarkedStale, first.RowID)
	}
	row, err := led.Get(context.Background(), first.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if !row.Stale || !strings.Contains(row.StaleReason, "router.policy: round_robin→cache_aware") {
		t.Fatalf("first row: stale %v, reason %q", row.Stale, row.StaleReason)
	}
	third := runOK(t, r, parseSpec(t, fmt.Sprintf(tinySpec, "cache_aware"))[0])
	if len(third.MarkedStale) != 0 {
		t.Fatalf("an identical config marked %+v stale", third.MarkedStale)
	}

	got, err := led.Get(context.Background(), second.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RouterMetricsURL == "" || !strings.HasSuffix(got.RouterMetricsURL, "/metrics") {
		t.Errorf("router_metrics_url = %q", got.RouterMetricsURL)
	}
	decisions := 0.0
	for _, n := range got.PolicyDecisions {
		decisions += n
	}
	// Warm-up, measured and gate requests all went through the router.
	if want := float64(8 + 24 + 2); decisions != want || len(got.PolicyDecisions) != 2 {
		t.Errorf("policy decisions %v (sum %v), want %v over 2 workers", got.PolicyDecisions, decisions, want)
	}
	// The router's own count for the run covers the measured requests only.
	if got.RouterRequests != 24 || got.RouterCompletionTokens != 24*8 || got.RouterPromptTokens != got.TotalInputTokens {
		t.Errorf("router's own run counts: %d requests, %d prompt and %d completion tokens; want 24, %d and 192",
			got.RouterRequests, got.RouterPromptTokens, got.RouterCompletionTokens, got.TotalInputTokens)
	}
	requireZeroLoads(t, got.FinalLoads)
	rows, err := led.List(context.Background(), ledger.Filter{Where: map[string]string{"policy": "cache_aware"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Errorf("querying rows by policy found %d, want 2", len(rows))
	}
}

// Acceptance 4: one replica without PD launches no router; the driver talks
// to the worker and the row has no router config.
func TestSingleReplicaLaunchesNoRouter(t *testing.T) {
	r, led := newTestRunner(t)
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "replicas: 2", "replicas: 1", 1)
	out := runOK(t, r, parseSpec(t, spec)[0])
	if out.Router != nil {
		t.Fatalf("a router was launched: %+v", out.Router)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RouterConfig) != 0 || row.RouterHash != "" || row.RouterMetricsURL != "" || row.FreshRouter {
		t.Fatalf("row of a routerless trial has router fields: config %q hash %q url %q fresh %v",
			row.RouterConfig, row.RouterHash, row.RouterMetricsURL, row.FreshRouter)
	}
	if row.Completed != 24 {
		t.Fatalf("completed %d, want 24", row.Completed)
	}
}

// Acceptance 5: a pool driven past saturation is RouterPoolExhausted, never
// a worker failure.
func TestSaturatedPoolIsRouterPoolExhausted(t *testing.T) {
	r, _ := newTestRunner(t)
	out, err := r.Run(context.Background(), parseSpec(t, `
name: saturated
seed: 3
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-m}
router: {policy: least_loaded, max_concurrent_requests: 2, queue_size: 2}
workload:
  kind: random
  input_len: 32
  output_len: 32
  num_prompts: 60
  arrival: {kind: inf}
warmup: {requests: 0}
gate: {reference: none}
`)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ledger.StatusFailed {
		t.Fatalf("status %s, want failed", out.Status)
	}
	f, ok := out.Failure.(failure.RouterPoolExhausted)
	if !ok {
		t.Fatalf("failure %T %v, want RouterPoolExhausted", out.Failure, out.Failure)
	}
	if f.ErrorType != "queue_full" || f.Count == 0 || f.PoolSize != 2 {
		t.Fatalf("failure %+v, want queue_full refusals on a pool of 2", f)
	}
	if out.Summary.Completed == 0 {
		t.Fatal("nothing completed: the pool was refused, not saturated")
	}
}

// A degraded deployment (4-bit AWQ) fails the quality gate against the
// full-precision reference, while fp8, a mild loss, stays under the default
// threshold but is still measurably different from the reference.
func TestQualityGateCatchesReducedPrecision(t *testing.T) {
	r, _ := newTestRunner(t)
	withQuant := func(q string) string {
		s := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "max_num_seqs: 32}", "max_num_seqs: 32, quantization: "+q+"}", 1)
		return strings.Replace(s, "prompts: 2}", "prompts: 8}", 1)
	}
	out, err := r.Run(context.Background(), parseSpec(t, withQuant("awq"))[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Gate == nil || out.Gate.Passed {
		t.Fatalf("awq: gate %+v, want a failed gate", out.Gate)
	}
	if _, ok := out.Failure.(failure.QualityGateFailed); !ok || out.Status != ledger.StatusFailed {
		t.Fatalf("awq: status %s failure %T, want failed with QualityGateFailed", out.Status, out.Failure)
	}
	fp8 := runOK(t, r, parseSpec(t, withQuant("fp8"))[0])
	if fp8.Gate == nil || fp8.Gate.KLMean <= 0 || fp8.Gate.KLMean >= out.Gate.KLMean {
		t.Fatalf("fp8 gate %+v: want 0 < KL < awq's %v", fp8.Gate, out.Gate.KLMean)
	}
	t.Logf("gate KL mean: fp8 %.5f (pass), awq %.5f (fail), threshold %.2f", fp8.Gate.KLMean, out.Gate.KLMean, out.Gate.KLThreshold)
}

// Ctrl-C mid-run: the runner stops the driver, tears down, records an
// aborted row and returns the context's error.
func TestInterruptRecordsAbortedRow(t *testing.T) {
	r, led := newTestRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.opts.Progress = func(p driver.Progress) {
		if p.Phase == "measured" && p.Done >= 5 {
			cancel()
		}
	}
	out, err := r.Run(ctx, parseSpec(t, fmt.Sprintf(tinySpec, "round_robin"))[0])
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if out.Status != ledger.StatusAborted || out.RowID == 0 {
		t.Fatalf("outcome %s row %d, want an aborted row", out.Status, out.RowID)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil || row.Status != ledger.StatusAborted {
		t.Fatalf("ledger row: %+v, %v", row.Status, err)
	}
}

// Acceptance 2: a prefill=2, decode=6 trial runs end to end through the
// router's PD mode and writes a quality-gated row: every request went
// through both legs and the answers match the collocated reference.
func TestPDTrialEndToEnd(t *testing.T) {
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
}

// With data_parallel_size 2 the simulated engine serves two ranks behind
// one port and the router (intra_node_data_parallel_size following the
// engine) addresses each rank: round_robin spreads over all four.
func TestDataParallelRanksThroughTheRouter(t *testing.T) {
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
