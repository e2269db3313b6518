package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// writeWindowTrace writes a Mooncake trace: prefixes reused one request
// at a time, 300 ms apart (so the caches see the same order on either
// clock), then a burst of long outputs that outgrows the engines' KV.
func writeWindowTrace(t *testing.T) string {
	t.Helper()
	var lines []map[string]any
	line := func(ms int, ids []int, out int) {
		lines = append(lines, map[string]any{"timestamp": ms, "input_length": len(ids) * traceBlockTokens, "output_length": out, "hash_ids": ids})
	}
	// Four prefixes in rotation: round robin keeps each on one engine.
	for i := range 24 {
		g := i % 4
		line(300*i, []int{g * 100, g*100 + 1, 10000 + i}, 4)
	}
	for i := range 8 {
		line(300*24, []int{20000 + i}, 240)
	}
	path := filepath.Join(t.TempDir(), "window.jsonl")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const windowSpec = `
name: window
seed: 5
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b, num_gpu_blocks_override: 48, max_model_len: 512}
router: {policy: round_robin}
workload:
  kind: trace
  path: %s
  block_size: %d
warmup: {requests: 0}
gate: {reference: none}
`

// Issue 30, acceptance 4: a virtual row carries the window figures a
// real row reads from the workers' metrics — prefix-cache hit rate,
// preemptions, KV usage, CPU-tier hits — and on a small trace they agree
// with a real-time run of it: the hit rate (the caches see the requests in
// the same order), preemptions on both, the KV peak in the real row's 0.05
// bucket. CPU-tier hits are 0 on both (a sim target has no CPU tier);
// TestFleetWindowCountsAsTheServedMetrics compares them with one.
func TestVirtualRowFiguresAgreeWithRealTime(t *testing.T) {
	t.Parallel()
	trace := writeWindowTrace(t)
	r, led := newTestRunner(t)
	row := func(clock string) ledger.Trial {
		t.Helper()
		ts := parseSpec(t, fmt.Sprintf(windowSpec, trace, traceBlockTokens))
		if err := trials.SetClock(ts, clock, "--clock"); err != nil {
			t.Fatal(err)
		}
		out := runOK(t, r, ts[0])
		row, err := led.Get(t.Context(), out.RowID)
		if err != nil {
			t.Fatal(err)
		}
		if row.PrefixCacheHitRate == nil || row.Preemptions == nil || row.KVUsagePeak == nil || row.KVUsageMean == nil || row.CPUTierHits == nil {
			t.Fatalf("%s row: figures missing: hit rate %v, preemptions %v, KV peak %v, mean %v, CPU-tier hits %v", clock,
				deref(row.PrefixCacheHitRate), deref(row.Preemptions), deref(row.KVUsagePeak), deref(row.KVUsageMean), deref(row.CPUTierHits))
		}
		t.Logf("%-7s hit rate %.4f, preemptions %d, KV usage peak %.4f mean %.4f, CPU-tier hits %d, engines %d", clock,
			*row.PrefixCacheHitRate, *row.Preemptions, *row.KVUsagePeak, *row.KVUsageMean, *row.CPUTierHits, len(row.Engines))
		return row
	}
	live, virt := row(trials.ClockReal), row(trials.ClockVirtual)
	// Equal on a quiet host; a loaded one once delayed a real request
	// enough to cost a few of its hits (the log then lists them).
	if math.Abs(*live.PrefixCacheHitRate-*virt.PrefixCacheHitRate) > 0.1 || *virt.PrefixCacheHitRate == 0 {
		t.Errorf("hit rate: real %.4f, virtual %.4f; want equal and > 0", *live.PrefixCacheHitRate, *virt.PrefixCacheHitRate)
		rq, _ := led.Requests(t.Context(), live.ID)
		vq, _ := led.Requests(t.Context(), virt.ID)
		for i := range min(len(rq), len(vq)) {
			if rq[i].CachedTokens != vq[i].CachedTokens {
				t.Logf("request %d: cached real %d, virtual %d; sent real %.1f ms (planned %.1f), e2e real %.1f virtual %.1f", i,
					rq[i].CachedTokens, vq[i].CachedTokens, rq[i].ActualSendMs, rq[i].IntendedSendMs, rq[i].E2ELMs, vq[i].E2ELMs)
			}
		}
	}
	if *live.Preemptions == 0 || *virt.Preemptions == 0 {
		t.Errorf("preemptions: real %d, virtual %d; the burst outgrows the KV cache on both clocks", *live.Preemptions, *virt.Preemptions)
	}
	if p, v := *live.KVUsagePeak, *virt.KVUsagePeak; v > p || v <= p-0.05 {
		t.Errorf("KV usage peak: virtual %.4f, want in the real row's bucket (%.2f, %.2f]", v, p-0.05, p)
	}
	if *virt.CPUTierHits != *live.CPUTierHits || len(virt.Engines) != len(live.Engines) {
		t.Errorf("CPU-tier hits real %d, virtual %d; engines real %d, virtual %d", *live.CPUTierHits, *virt.CPUTierHits, len(live.Engines), len(virt.Engines))
	}
}
