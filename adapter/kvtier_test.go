package adapter

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// Reuse trace: groups prefixes of prefixBlocks blocks, requested in strict
// rotation for rounds rounds, each request with one block of its own. An
// engine that sees k of the groups reuses a prefix after k−1 others.
const (
	traceGroups       = 9
	traceRounds       = 4
	tracePrefixBlocks = 4
	traceBlockTokens  = 64
)

// writeReuseTrace writes the trace as Mooncake JSON Lines.
func writeReuseTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reuse.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for i := range traceGroups * traceRounds {
		g := i % traceGroups
		ids := make([]int, 0, tracePrefixBlocks+1)
		for b := range tracePrefixBlocks {
			ids = append(ids, g*100+b)
		}
		ids = append(ids, 10000+i)
		line := map[string]any{"timestamp": i * 10, "input_length": len(ids) * traceBlockTokens, "output_length": 4, "hash_ids": ids}
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

const kvTierSpec = `
name: kv-tier
seed: 3
target: {kind: static, hardware: test-sim-small-kv, workers: [%s, %s]}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b}
router: {policy: %s}
workload:
  kind: trace
  path: %s
  block_size: %d
  ignore_timestamps: true
  arrival: {kind: closed_loop, max_concurrency: 1}
warmup: {requests: 0}
gate: {reference: none}
`

// smallKV is an engine whose GPU KV cache holds one request (24 blocks of
// 16 tokens; a request takes 21) and almost nothing besides, so no prefix
// survives until its reuse; cpuGiB > 0 adds a CPU tier that holds every
// prefix of the trace.
func smallKV(cpuGiB float64) sim.Options {
	return sim.Options{Engine: engine.Config{NumGPUBlocksOverride: 24, MaxModelLen: 384}, KVOffload: sim.KVOffload{GiB: cpuGiB}}
}

// Acceptance 19.4: with a GPU KV cache too small for the trace's reuse,
// cache_aware and round_robin tie on hit rate; with a CPU tier that holds
// every prefix, cache_aware's hit rate (all tiers) rises and the row shows
// CPU-tier hits. Each trial gets fresh engines, so no cache carries over.
func TestCPUTierLiftsCacheAwareHitRate(t *testing.T) {
	t.Parallel()
	trace := writeReuseTrace(t)
	r, led := newTestRunner(t)
	run := func(policy string, cpuGiB float64) (gpu, all float64, cpuHits int64) {
		t.Helper()
		spec := fmt.Sprintf(kvTierSpec, simtest.Start(t, smallKV(cpuGiB)), simtest.Start(t, smallKV(cpuGiB)), policy, trace, traceBlockTokens)
		out := runOK(t, r, parseSpec(t, spec)[0])
		row, err := led.Get(t.Context(), out.RowID)
		if err != nil {
			t.Fatal(err)
		}
		if row.PrefixCacheHitRate == nil || row.AllTiersHitRate == nil || row.CPUTierHits == nil {
			t.Fatalf("%s, CPU tier %g GiB: figures missing: hit rate %v, all tiers %v, CPU-tier hits %v", policy, cpuGiB,
				deref(row.PrefixCacheHitRate), deref(row.AllTiersHitRate), deref(row.CPUTierHits))
		}
		// A request holds 21 of the 24 blocks at its last step (324 tokens):
		// usage 0.875, in the per-step histogram's (0.85, 0.9] bucket.
		if p := row.KVUsagePeak; p == nil || *p != 0.9 {
			t.Errorf("%s, CPU tier %g GiB: KV usage peak %v, want 0.9 (21 of 24 blocks, to within the bucket)", policy, cpuGiB, deref(p))
		}
		t.Logf("%-11s CPU tier %g GiB: GPU hit rate %.3f, all tiers %.3f, CPU-tier hits %d tokens, preemptions %v, KV usage peak %.2f mean %.2f",
			policy, cpuGiB, *row.PrefixCacheHitRate, *row.AllTiersHitRate, *row.CPUTierHits, deref(row.Preemptions),
			deref(row.KVUsagePeak), deref(row.KVUsageMean))
		return *row.PrefixCacheHitRate, *row.AllTiersHitRate, *row.CPUTierHits
	}
	rrGPU, _, _ := run("round_robin", 0)
	caGPU, caAll, caCPU := run("cache_aware", 0)
	if math.Abs(rrGPU-caGPU) > 0.02 || caCPU != 0 || caAll != caGPU {
		t.Errorf("GPU only: hit rates round_robin %.3f, cache_aware %.3f (all tiers %.3f), CPU-tier hits %d; want a tie and no CPU hits",
			rrGPU, caGPU, caAll, caCPU)
	}
	_, caTierAll, caTierCPU := run("cache_aware", 1)
	if caTierAll < caAll+0.3 || caTierCPU == 0 {
		t.Errorf("with a CPU tier: cache_aware hit rate %.3f (GPU only %.3f), CPU-tier hits %d; want it up by > 0.3 and CPU hits",
			caTierAll, caAll, caTierCPU)
	}
	_, rrTierAll, _ := run("round_robin", 1)
	if rrTierAll >= caTierAll {
		t.Errorf("with a CPU tier: round_robin %.3f ≥ cache_aware %.3f; round_robin's groups alternate engines and miss twice", rrTierAll, caTierAll)
	}
}
