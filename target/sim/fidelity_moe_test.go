package sim_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// deriveConfig derives the profile of a repository config on gpu for e.
func deriveConfig(t *testing.T, file, gpu string, e engine.Config) sim.Profile {
	t.Helper()
	data, err := os.ReadFile("configs/" + file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.DeriveProfile(gpu, data, e)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return ms(ds[len(ds)/2])
}

// fp8KVServe is the FP8-KV blog's throughput run (vLLM blog 2026-04-22,
// Table 5; shared/reference/fidelity-moe.md rows 1 and 2): gpt-oss-20b on
// one H100, vLLM v0.19.1 (async scheduling), 150 requests at concurrency 8,
// ~20k input and ~2k output tokens (±15 %, uniform as vllm bench's range
// ratio draws them). It returns the median TTFT and ITL (ms), the run's
// duration (s) and output throughput (tokens/s).
func fp8KVServe(t *testing.T, kvDtype string) (ttft, itl, dur, tput float64) {
	on := true
	e := engine.Config{Model: model, KVCacheDtype: kvDtype, AsyncScheduling: &on, MaxModelLen: 32768}
	p := deriveConfig(t, "gpt-oss-20b.json", "h100", e)
	r := rand.New(rand.NewPCG(9, 10))
	trace := make([]sim.TraceRequest, 150)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, 17000+r.IntN(6001)), MaxTokens: 1700 + r.IntN(601), IgnoreEOS: true}
		if i >= 8 {
			trace[i].After = i - 7
		}
	}
	rep, err := sim.Replay(sim.Options{Engine: e, Profile: p}, trace)
	if err != nil {
		t.Fatal(err)
	}
	var ttfts, itls []time.Duration
	tokens := 0
	for _, q := range rep.Requests {
		ttfts = append(ttfts, q.TTFT())
		for i := 1; i < len(q.TokenTimes); i++ {
			itls = append(itls, q.TokenTimes[i]-q.TokenTimes[i-1])
		}
		tokens += len(q.TokenTimes)
	}
	return median(ttfts), median(itls), rep.End.Seconds(), float64(tokens) / rep.End.Seconds()
}

// itlFit sweeps one sequence's input length (256 to 125k, 128 output
// tokens, as the FP8-KV blog's concurrency-1 sweep) and fits the median
// ITL's line: slope (ms per token) and intercept (ms).
func itlFit(t *testing.T, file, gpu, kvDtype string) (slope, intercept float64) {
	on := true
	e := engine.Config{Model: model, KVCacheDtype: kvDtype, AsyncScheduling: &on, MaxModelLen: 131072}
	p := deriveConfig(t, file, gpu, e)
	r := rand.New(rand.NewPCG(11, 12))
	var sx, sy, sxx, sxy, n float64
	for _, in := range []int{256, 1024, 4096, 16384, 32768, 65536, 125000} {
		rep, err := sim.Replay(sim.Options{Engine: e, Profile: p}, []sim.TraceRequest{{Prompt: randomPrompt(r, in), MaxTokens: 128, IgnoreEOS: true}})
		if err != nil {
			t.Fatal(err)
		}
		tt := rep.Requests[0].TokenTimes
		gaps := make([]time.Duration, 0, len(tt))
		for i := 1; i < len(tt); i++ {
			gaps = append(gaps, tt[i]-tt[i-1])
		}
		x, y := float64(in), median(gaps)
		sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
	}
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return slope, (sy - slope*sx) / n
}

// Acceptance 5 of issue 29: the rows of shared/reference/fidelity-moe.md
// graded H or M that the engine can express, each held to 15 % and their
// median to 10 %. Rows 1 and 2 are gpt-oss-20b on one H100; row 5 the same
// model on one B200 (a GPU derived from its datasheet). Two H100 figures are
// fitted, not checked: row 1's median ITL and the intercept of the same
// blog's H100 single-sequence sweep (row 4's, 4.03–4.07 ms), on which the
// MoE kernels' memory efficiency and fixed latency
// (stepmodel.groupedGEMMMemEff, moeFixedUs) are fitted; no B200 figure
// is used to calibrate anything, so row 5 checks the carry-over to
// Blackwell.
func TestReproducesPublishedMoEMeasurements(t *testing.T) {
	t.Parallel()
	type check struct {
		row, name string
		published float64
		simulated float64
		tolerance float64
	}
	var checks []check
	for _, c := range []struct {
		row, kv              string
		ttft, itl, dur, tput float64
	}{{"1", "", 468.9, 8.09, 364.2, 831.6}, {"2", "fp8", 451.7, 7.90, 355.1, 853.0}} {
		ttft, itl, dur, tput := fp8KVServe(t, c.kv)
		kv := "BF16 KV"
		if c.kv != "" {
			kv = "FP8 KV"
		}
		checks = append(checks,
			check{c.row, "gpt-oss-20b H100 " + kv + " median TTFT (ms)", c.ttft, ttft, 0.15},
			check{c.row, "gpt-oss-20b H100 " + kv + " median ITL (ms)", c.itl, itl, 0.15},
			check{c.row, "gpt-oss-20b H100 " + kv + " total duration (s)", c.dur, dur, 0.15},
			check{c.row, "gpt-oss-20b H100 " + kv + " output tok/s", c.tput, tput, 0.15})
	}
	for _, c := range []struct {
		kv               string
		slope, intercept float64
	}{{"", 3.56e-6, 3.15}, {"fp8", 2.06e-6, 3.17}} {
		s, i := itlFit(t, "gpt-oss-20b.json", "b200", c.kv)
		kv := "BF16 KV"
		if c.kv != "" {
			kv = "FP8 KV"
		}
		checks = append(checks,
			check{"5", "gpt-oss-20b B200 " + kv + " ITL intercept (ms)", c.intercept, i, 0.15},
			check{"5", "gpt-oss-20b B200 " + kv + " ITL slope (ns/token)", c.slope * 1e6, s * 1e6, 0.15})
	}
	// The H100 single-sequence sweep behind row 4 (not a row of its own:
	// the table keeps its break-even): its BF16 fit, 8.94e-06 ms per token
	// and an intercept of 4.03–4.07 ms, the intercept being fitted. Held
	// to 15 % but outside the median, which counts the table's rows.
	s, i := itlFit(t, "gpt-oss-20b.json", "h100", "")
	h100 := []check{
		{"4*", "gpt-oss-20b H100 BF16 KV ITL intercept (ms, fitted)", 4.05, i, 0.15},
		{"4*", "gpt-oss-20b H100 BF16 KV ITL slope (ns/token)", 8.94, s * 1e6, 0.15},
	}
	// GPUStack's rows (L: third-party, ShareGPT whose sample is not here):
	// reported, not gated. The workload is a stand-in with ShareGPT's mean
	// lengths (217 in, 198 out) drawn uniformly, so the figures say little
	// about TTFT, which ShareGPT's long tail decides.
	for _, c := range []struct {
		row, file, gpu string
		e              engine.Config
		out, tpot      float64
	}{
		{"16", "qwen3-235b-a22b.json", "h100", engine.Config{TensorParallelSize: 8}, 4015.36, 147.56},
		{"17", "qwen3-235b-a22b.json", "h100", engine.Config{TensorParallelSize: 8, Quantization: "fp8", EnableExpertParallel: true}, 3856.59, 169.52},
		{"18", "qwen3-235b-a22b.json", "h100", engine.Config{TensorParallelSize: 4, Quantization: "fp8"}, 3592.57, 169.20},
		{"20", "qwen3-235b-a22b.json", "a100", engine.Config{TensorParallelSize: 8}, 1798.14, 123.36},
		{"22", "qwen3-235b-a22b.json", "a100", engine.Config{TensorParallelSize: 4, Quantization: "fp8"}, 1428.16, 150.72},
		{"25", "gpt-oss-20b.json", "h100", engine.Config{}, 7817.03, 91.00},
	} {
		out, tpot := shareGPTStandIn(t, c.file, c.gpu, c.e)
		checks = append(checks,
			check{c.row, c.file + " " + c.gpu + " output tok/s (L)", c.out, out, math.Inf(1)},
			check{c.row, c.file + " " + c.gpu + " mean TPOT ms (L)", c.tpot, tpot, math.Inf(1)})
	}
	var gated []float64
	for _, c := range append(checks, h100...) {
		dev := c.simulated/c.published - 1
		t.Logf("row %s  %-44s published %8.2f  simulated %8.2f  %+6.1f %%", c.row, c.name, c.published, c.simulated, 100*dev)
		if math.Abs(dev) > c.tolerance {
			t.Errorf("row %s %s: simulated %.2f vs published %.2f (%+.1f %%, limit ±%.0f %%)", c.row, c.name, c.simulated, c.published, 100*dev, 100*c.tolerance)
		}
		if c.tolerance <= 0.15 && c.row != "4*" { // the H and M rows held to 15 %
			gated = append(gated, math.Abs(dev))
		}
	}
	slices.Sort(gated)
	if med := gated[len(gated)/2]; med > 0.10 {
		t.Errorf("median error of the gated rows %.1f %%, want within 10 %%", 100*med)
	}
}

// shareGPTStandIn is GPUStack's `vllm bench serve` of 1000 ShareGPT
// prompts at rate inf (vLLM v0.11, synchronous scheduling) with uniform
// lengths of ShareGPT's means in place of the sample: output tokens per
// second and the mean time per output token (ms).
func shareGPTStandIn(t *testing.T, file, gpu string, e engine.Config) (tput, tpot float64) {
	e.Model = model
	p := deriveConfig(t, file, gpu, e)
	r := rand.New(rand.NewPCG(13, 14))
	trace := make([]sim.TraceRequest, 1000)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, 1+r.IntN(433)), MaxTokens: 1 + r.IntN(395), IgnoreEOS: true}
	}
	rep, err := sim.Replay(sim.Options{Engine: e, Profile: p}, trace)
	if err != nil {
		t.Fatal(err)
	}
	tokens, sum, n := 0, 0.0, 0
	for _, q := range rep.Requests {
		tokens += len(q.TokenTimes)
		if k := len(q.TokenTimes); k > 1 {
			sum += ms(q.TokenTimes[k-1]-q.TokenTimes[0]) / float64(k-1)
			n++
		}
	}
	return float64(tokens) / rep.End.Seconds(), sum / float64(n)
}
