package sim_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// reuseTrace cycles through groups prefixes of prefixBlocks blocks (16
// tokens each) passes times, one request at a time: between two uses of a
// prefix the other groups−1 prefixes pass, so the reuse distance is
// (groups−1)·prefixBlocks blocks. Each request adds a unique 8-token suffix.
func reuseTrace(groups, prefixBlocks, passes int) []sim.TraceRequest {
	var trace []sim.TraceRequest
	for p := range passes {
		for g := range groups {
			prompt := make([]int, 0, prefixBlocks*16+8)
			for k := range prefixBlocks * 16 {
				prompt = append(prompt, 1+(g*prefixBlocks*16+k)%30000)
			}
			for k := range 8 {
				prompt = append(prompt, 30001+(p*groups+g)*8+k)
			}
			trace = append(trace, sim.TraceRequest{Prompt: prompt, MaxTokens: 2, IgnoreEOS: true, After: len(trace)})
		}
	}
	return trace
}

// offloadRun replays the trace on an engine of 64 GPU blocks with a CPU
// tier of gib GiB (the profile's blocks are 2 MiB: 0.5 GiB holds 256).
func offloadRun(t *testing.T, trace []sim.TraceRequest, gib float64) (hitRate float64, rep *sim.ReplayReport) {
	t.Helper()
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	opts := sim.Options{Engine: engine.Config{Model: "m", MaxModelLen: 512, NumGPUBlocksOverride: 64}, Profile: prof,
		KVOffload: sim.KVOffload{GiB: gib}}
	rep, err = sim.Replay(opts, trace)
	if err != nil {
		t.Fatal(err)
	}
	cached, prompt := 0, 0
	for i, r := range rep.Requests {
		if i >= len(trace)/3 { // after the first pass: every prefix has been seen
			cached += r.CachedTokens
			prompt += len(trace[i].Prompt)
		}
	}
	return float64(cached) / float64(prompt), rep
}

func counter(t *testing.T, rep *sim.ReplayReport, name string) float64 {
	t.Helper()
	fams, err := rep.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("metric %s not exported", name)
	return 0
}

// TestCPUTierKeepsReuseTheGPUCacheCannot: 40 prefixes of 4 blocks reused at
// a distance of 156 blocks overflow 64 GPU blocks (LRU keeps none of them),
// and a CPU tier of 32 blocks is too small too; a 256-block tier holds the
// whole working set, so the later passes hit and vLLM's external-hit
// counter counts exactly those tokens, loaded at the modelled cost.
func TestCPUTierKeepsReuseTheGPUCacheCannot(t *testing.T) {
	t.Parallel()
	trace := reuseTrace(40, 4, 3)
	gpuOnly, _ := offloadRun(t, trace, 0)
	small, _ := offloadRun(t, trace, 1.0/16)
	large, rep := offloadRun(t, trace, 0.5)
	t.Logf("hit rate after the first pass: GPU only %.3f, 32-block CPU tier %.3f, 256-block CPU tier %.3f", gpuOnly, small, large)
	if gpuOnly > 0.05 || small > 0.05 {
		t.Errorf("reuse beyond the caches: hit rates %.3f (GPU only) and %.3f (small tier), want ~0", gpuOnly, small)
	}
	// Every prefix (64 of 72 tokens) comes back from the CPU tier.
	if large < 0.85 {
		t.Errorf("with a 256-block CPU tier the hit rate is %.3f, want >= 0.85 (64 of 72 tokens)", large)
	}
	ext := counter(t, rep, "vllm:external_prefix_cache_hits_total")
	gpu := counter(t, rep, "vllm:prefix_cache_hits_total")
	total := 0
	for _, r := range rep.Requests {
		total += r.CachedTokens
	}
	if ext == 0 || ext+gpu != float64(total) {
		t.Errorf("external hits %v + GPU hits %v, want > 0 and summing to the requests' cached tokens %d", ext, gpu, total)
	}
	blocks := counter(t, rep, "autoinfer:sim_kv_offload_loaded_blocks_total")
	secs := counter(t, rep, "autoinfer:sim_kv_offload_load_seconds_total")
	// 5 µs per block + 2 MiB at 50 GB/s.
	blockBytes := float64(2 << 20)
	perBlock := time.Duration(float64(5*time.Microsecond) + blockBytes/50)
	if blocks != ext/16 || math.Abs(secs-blocks*perBlock.Seconds()) > 1e-9 {
		t.Errorf("loaded %v blocks in %vs, want %v blocks at %v each", blocks, secs, ext/16, perBlock)
	}
	if counter(t, rep, "vllm:external_prefix_cache_queries_total") < ext {
		t.Error("external queries below external hits")
	}
}

func TestKVOffloadOptionsAreChecked(t *testing.T) {
	t.Parallel()
	prof, _ := sim.LookupProfile("h100-llama3-8b")
	off := false
	for _, tc := range []struct {
		o    sim.KVOffload
		eng  engine.Config
		want string
	}{
		{sim.KVOffload{GiB: -1}, engine.Config{Model: "m"}, "kv_offload_gib"},
		{sim.KVOffload{GBps: 10}, engine.Config{Model: "m"}, "without a CPU tier"},
		{sim.KVOffload{GiB: 1e-9}, engine.Config{Model: "m"}, "holds no block"},
		{sim.KVOffload{GiB: 1}, engine.Config{Model: "m", EnablePrefixCaching: &off}, "prefix caching"},
	} {
		_, err := sim.New(sim.Options{Engine: tc.eng, Profile: prof, KVOffload: tc.o})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}
