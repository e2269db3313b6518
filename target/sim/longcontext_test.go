package sim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// Acceptance 3 of issue 29: one sequence decoding after a long prompt on
// h100-llama3-8b follows vLLM's published inter-token latency fit for
// Llama-3.1-8B on one H100 (vLLM blog "FP8 KV-cache", 2026-04-22, BF16 KV,
// FlashAttention 3, v0.19.1, concurrency 1, 128 output tokens, input swept
// 256 to 125k: ITL = 6.44 ms + 43.7 ns per context token) within 10 % at
// every input length from 1k to 64k. v0.19.1 schedules asynchronously
// (vLLM's default from v0.14), so the run does too. Neither figure of the
// fit is used to calibrate the model: the slope is the KV bytes at the best
// bandwidth vidur's A100 attention rows reached, the intercept vidur's H100
// 1-token GEMMs, the LM head and the measured A100 attention launch. The
// same post's B200 fit (FlashInfer: 3.93 ms + 18.0 ns per token) is held
// to the same 10 % on b200-llama3-8b, a GPU derived from its datasheet.
func TestSingleSequenceITLFollowsVLLMsContextFit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		profile          string
		intercept, slope float64 // ms, ms per token
	}{{"h100-llama3-8b", 6.44, 43.7e-6}, {"b200-llama3-8b", 3.93, 18.0e-6}} {
		p, err := sim.LookupProfile(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		on := true
		const out = 64
		r := rand.New(rand.NewPCG(7, 8))
		for _, in := range []int{1024, 2048, 4096, 8192, 16384, 32768, 65536} {
			rep, err := sim.Replay(sim.Options{Profile: p, Engine: engine.Config{Model: model, MaxModelLen: 65536 + out, AsyncScheduling: &on}},
				[]sim.TraceRequest{{Prompt: randomPrompt(r, in), MaxTokens: out, IgnoreEOS: true}})
			if err != nil {
				t.Fatal(err)
			}
			times := rep.Requests[0].TokenTimes
			gaps := make([]time.Duration, 0, len(times)-1)
			for i := 1; i < len(times); i++ {
				gaps = append(gaps, times[i]-times[i-1])
			}
			slices.Sort(gaps)
			itl := ms(gaps[len(gaps)/2])
			want := c.intercept + c.slope*float64(in)
			dev := itl/want - 1
			t.Logf("%s input %6d: median ITL %.3f ms, vLLM's fit %.3f ms (%+.1f %%)", c.profile, in, itl, want, 100*dev)
			if math.Abs(dev) > 0.10 {
				t.Errorf("%s input %d: median ITL %.3f ms is %+.1f %% off vLLM's fit %.3f ms (limit ±10 %%)", c.profile, in, itl, 100*dev, want)
			}
		}
	}
}
