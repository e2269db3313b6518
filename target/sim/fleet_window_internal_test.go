package sim

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
)

// windowTrace has shared prefixes reused after other prefixes passed
// through a small GPU cache (CPU-tier hits), then a burst of long outputs
// that outgrows the KV cache (preemptions).
func windowTrace() []TraceRequest {
	var trace []TraceRequest
	for pass := range 2 {
		for g := range 120 { // each prefix three times in a row: the ranks alternate, so the third hits the GPU
			prompt := make([]int, 0, 72)
			for k := range 64 {
				prompt = append(prompt, 1+g/3*64+k)
			}
			for k := range 8 {
				prompt = append(prompt, 10001+(pass*120+g)*8+k)
			}
			trace = append(trace, TraceRequest{Prompt: prompt, MaxTokens: 2, IgnoreEOS: true, After: len(trace)})
		}
	}
	at := 10 * time.Second
	for i := range 6 {
		prompt := make([]int, 96)
		for k := range prompt {
			prompt[k] = 50001 + i*96 + k
		}
		trace = append(trace, TraceRequest{At: at, Prompt: prompt, MaxTokens: 300, IgnoreEOS: true})
	}
	return trace
}

// gathered sums a family of the registry (a histogram's: its buckets'
// cumulative counts by upper bound, +Inf the sample count, in
// buckets).
func gathered(t *testing.T, g prometheus.Gatherer, name string, buckets map[float64]uint64) float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
			if buckets != nil {
				buckets[math.Inf(1)] += m.GetHistogram().GetSampleCount()
			}
			for _, b := range m.GetHistogram().GetBucket() {
				buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
	}
	return sum
}

// Issue 30, item 5: a fleet's window counts are what the served engine's
// metrics count for the same run: prefix-cache hits and queries,
// preemptions, CPU-tier hits exactly, the per-step KV peak within the
// served histogram's bucket; and a window opened at the end counts
// nothing.
func TestFleetWindowCountsAsTheServedMetrics(t *testing.T) {
	prof, err := LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Engine: engcfg.Config{Model: "m", MaxModelLen: 512, NumGPUBlocksOverride: 64, DataParallelSize: 2}, Profile: prof,
		KVOffload: KVOffload{GiB: 0.5}}
	served, err := replayOn(opts, windowTrace(), true)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := replayOn(opts, windowTrace(), false)
	if err != nil {
		t.Fatal(err)
	}
	ws := counted.f.Window()
	if len(ws) != 1 {
		t.Fatalf("%d workers' counts, want 1", len(ws))
	}
	w, reg := ws[0], served.f.servers[0].m.reg
	steps := map[float64]uint64{}
	for _, c := range []struct {
		name string
		got  float64
	}{
		{"vllm:prefix_cache_hits_total", w.PrefixHits}, {"vllm:prefix_cache_queries_total", w.PrefixQueries},
		{"vllm:num_preemptions_total", w.Preemptions}, {"vllm:external_prefix_cache_hits_total", w.CPUTierHits},
	} {
		if want := gathered(t, reg, c.name, nil); c.got != want {
			t.Errorf("%s: window %v, served %v", c.name, c.got, want)
		}
	}
	t.Logf("window: %+v", w)
	if w.PrefixHits == 0 || w.Preemptions == 0 || w.CPUTierHits == 0 {
		t.Errorf("the trace should hit, preempt and load from the CPU tier: %+v", w)
	}
	gathered(t, reg, "autoinfer:sim_kv_usage_step_perc", steps)
	bound := math.Inf(1)
	for ub, n := range steps {
		if n == steps[math.Inf(1)] && ub < bound {
			bound = ub
		}
	}
	if !w.Stepped || w.KVUsagePeak > bound || w.KVUsagePeak <= bound-0.05 {
		t.Errorf("KV usage peak %v (stepped %v), want in the served histogram's bucket (%v, %v]", w.KVUsagePeak, w.Stepped, bound-0.05, bound)
	}
	if !(w.KVUsageMean > 0 && w.KVUsageMean < w.KVUsagePeak) {
		t.Errorf("KV usage mean %v, want in (0, peak %v)", w.KVUsageMean, w.KVUsagePeak)
	}
	counted.f.OpenWindow()
	if w := counted.f.Window()[0]; w.PrefixQueries != 0 || w.Preemptions != 0 || w.Stepped {
		t.Errorf("a window opened after the run counted %+v", w)
	}
}
