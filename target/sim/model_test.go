package sim_test

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// timing is a linear profile with round coefficients, so expected step
// times are easy to read in failures.
var timing = sim.Profile{Name: "test-timing", StepBaseMs: 4, PrefillUsPerToken: 20, DecodeUsPerSeq: 100, DecodeNsPerContextToken: 30,
	KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 2, NumGPUBlocks: 4096}

func prompt(seed uint64, n int) string {
	return tokenizer.Generate(rand.New(rand.NewPCG(seed, 99)), n)
}

func promptIDs(seed uint64, n int) []int {
	ids := tokenizer.Tokenize(prompt(seed, n))
	if len(ids) != n {
		panic("tokenizer.Generate made a prompt of another length")
	}
	return ids
}

// Acceptance 2: at concurrency 1, TTFT and every inter-token gap seen by an
// HTTP client are exactly the profile's step times. The engine runs inside
// a synctest bubble on an in-memory network, so its step loop waits on the
// bubble's fake clock and nothing else adds time.
func TestLatencyFollowsProfileAtConcurrencyOne(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		off := false
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing, Engine: engine.Config{EnablePrefixCaching: &off}})
		const tokens = 20
		for i, p := range []int{64, 2000} {
			start, ev := streamPostVia(t, n.Client(), w.URL+"/v1/completions", map[string]any{"model": model,
				"prompt": prompt(uint64(i), p), "max_tokens": tokens, "ignore_eos": true, "stream": true, "temperature": 0})
			if len(ev) != tokens+1 {
				t.Fatalf("got %d frames, want %d tokens + [DONE]", len(ev), tokens)
			}
			if got, want := ev[0].at.Sub(start), timing.StepTime(p, 0, 0); got != want {
				t.Errorf("prompt %d: TTFT %v, model %v", p, got, want)
			}
			for k := 1; k < tokens; k++ {
				// The k-th decode step reads the prompt and k-1 earlier
				// outputs, and computes the k-th output's KV.
				if got, want := ev[k].at.Sub(ev[k-1].at), timing.StepTime(0, 1, p+k-1); got != want {
					t.Fatalf("prompt %d: gap before token %d is %v, model %v", p, k+1, got, want)
				}
			}
		}
	})
}

// Acceptance 3: a repeated prompt hits the prefix cache and costs only its
// uncached tail: exactly one 8-token chunk after 992 cached tokens.
func TestRepeatedPromptHitsPrefixCache(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		w := simtest.StartPipe(t, n, sim.Options{Profile: timing})
		body := map[string]any{"model": model, "prompt": prompt(7, 1000), "max_tokens": 2, "ignore_eos": true, "temperature": 0}
		run := func() (completion, time.Duration) {
			t0 := time.Now()
			code, raw := postVia(t, n.Client(), w.URL+"/v1/completions", body)
			var c completion
			if code != 200 || json.Unmarshal(raw, &c) != nil {
				t.Fatalf("completion: %d %s", code, raw)
			}
			return c, time.Since(t0)
		}
		first, cold := run()
		second, warm := run()
		decode := timing.StepTime(0, 1, 1000)
		if want := timing.StepTime(1000, 0, 0) + decode; cold != want {
			t.Errorf("first request took %v, model %v", cold, want)
		}
		cached := 992 // whole blocks, at most prompt − 1 tokens
		if want := timing.BatchTime(&sim.Batch{Chunks: []sim.Chunk{{Tokens: 1000 - cached, Prefix: cached}}}) + decode; warm != want {
			t.Errorf("repeat took %v, model %v (8 uncached tokens)", warm, want)
		}
		if c := first.Usage.PromptTokensDetails.CachedTokens; c != 0 {
			t.Errorf("first request reports %d cached tokens, want 0", c)
		}
		if c := second.Usage.PromptTokensDetails.CachedTokens; c != cached {
			t.Errorf("repeat reports %d cached tokens, want %d", c, cached)
		}
		if got := metrics(t, n.Client(), w.URL).Sum("vllm:prefix_cache_hits_total", nil); got != float64(cached) {
			t.Errorf("prefix_cache_hits_total %v, want %d", got, cached)
		}
		if first.Choices[0].Text != second.Choices[0].Text {
			t.Errorf("cached and uncached answers differ: %q vs %q", first.Choices[0].Text, second.Choices[0].Text)
		}
	})
}

// Acceptance 4: continuous batching: 32 streams share steps, so each step
// serves all of them and aggregate throughput rises by the ratio of step
// times. Replayed on the virtual clock, the figures are exact.
func TestContinuousBatchingRaisesThroughput(t *testing.T) {
	t.Parallel()
	const streams, tokens, plen = 32, 40, 32
	trace := make([]sim.TraceRequest, streams)
	for i := range trace {
		trace[i] = sim.TraceRequest{Prompt: promptIDs(uint64(100+i), plen), MaxTokens: tokens, IgnoreEOS: true}
	}
	opts := sim.Options{Engine: engine.Config{Model: model}, Profile: timing}
	single, err := sim.Replay(opts, trace[:1])
	if err != nil {
		t.Fatal(err)
	}
	batched, err := sim.Replay(opts, trace)
	if err != nil {
		t.Fatal(err)
	}
	// All 32 arrive together: one step prefills them all, then every
	// step decodes all 32.
	if want := timing.StepTime(streams*plen, 0, 0); batched.Requests[0].TTFT() != want {
		t.Errorf("batched TTFT %v, model %v", batched.Requests[0].TTFT(), want)
	}
	for i, r := range batched.Requests {
		for k := 1; k < tokens; k++ {
			if got, want := r.TokenTimes[k]-r.TokenTimes[k-1], timing.StepTime(0, streams, streams*(plen+k-1)); got != want {
				t.Fatalf("stream %d: gap before token %d is %v, model %v (a step of all %d streams)", i, k+1, got, want, streams)
			}
		}
	}
	if batched.Steps != tokens || single.Steps != tokens {
		t.Errorf("steps: %d batched, %d single, want %d each", batched.Steps, single.Steps, tokens)
	}
	gain := float64(streams) * single.End.Seconds() / batched.End.Seconds()
	t.Logf("single stream %v for %d tokens, %d streams %v: throughput ×%.1f", single.End, tokens, streams, batched.End, gain)
	if gain < 8 {
		t.Errorf("aggregate throughput only ×%.1f the single stream's with %d streams sharing steps", gain, streams)
	}
}

// Acceptance 5: with a small KV cache excess requests wait, nothing is lost,
// and preemption does not change any answer.
func TestSmallKVCacheQueuesAndCompletes(t *testing.T) {
	t.Parallel()
	small := simtest.Start(t, sim.Options{Engine: engine.Config{NumGPUBlocksOverride: 48, MaxModelLen: 768}})
	large := simtest.Start(t, sim.Options{})
	const n = 8
	bodies := make([]map[string]any, n)
	for i := range bodies {
		bodies[i] = map[string]any{"model": model, "prompt": prompt(uint64(i), 150), "max_tokens": 120, "ignore_eos": true, "temperature": 0}
	}
	var wg sync.WaitGroup
	got := make([]completion, n)
	for i := range n {
		wg.Go(func() { got[i] = complete(t, small, bodies[i]) })
	}
	// Watch the gauge until it shows a waiting request or every request has
	// ended (also a failed one, so the loop cannot outlive the requests).
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	inFlight := func() bool {
		select {
		case <-ended:
			return false
		default:
			return true
		}
	}
	sawWaiting := false
	for !sawWaiting && inFlight() {
		sawWaiting = metricValue(t, small, "vllm:num_requests_waiting") > 0
	}
	<-ended
	if t.Failed() {
		t.FailNow() // a request failed in its goroutine; its answer is missing
	}
	if !sawWaiting {
		t.Error("vllm:num_requests_waiting never rose above 0 with 8 requests needing 17 blocks each in 48 blocks")
	}
	for i := range n {
		want := complete(t, large, bodies[i])
		if got[i].Choices[0].Text != want.Choices[0].Text || got[i].Usage.CompletionTokens != 120 {
			t.Errorf("request %d: answer under KV pressure differs from the unconstrained one", i)
		}
	}
	t.Logf("preemptions: %v", metricValue(t, small, "vllm:num_preemptions_total"))
}

// Acceptance 6: identical answers across replicas at temperature 0; a lower
// precision changes them measurably.
func TestDeterministicAcrossReplicasAndPrecision(t *testing.T) {
	t.Parallel()
	a := simtest.Start(t, sim.Options{})
	b := simtest.Start(t, sim.Options{})
	fp8 := simtest.Start(t, sim.Options{Engine: engine.Config{Quantization: "fp8"}, FlipRate: ptr(0.1)})
	body := map[string]any{"model": model, "prompt": prompt(3, 40), "max_tokens": 64, "ignore_eos": true, "temperature": 0, "logprobs": 5}
	ra, rb, rq := complete(t, a, body), complete(t, b, body), complete(t, fp8, body)
	ja, _ := json.Marshal(ra.Choices[0].Logprobs)
	jb, _ := json.Marshal(rb.Choices[0].Logprobs)
	if ra.Choices[0].Text != rb.Choices[0].Text || string(ja) != string(jb) {
		t.Fatalf("two replicas disagree at temperature 0:\n%s\n%s", ra.Choices[0].Text, rb.Choices[0].Text)
	}
	flipped, drift := 0, 0.0
	for i, tok := range ra.Choices[0].Logprobs.Tokens {
		if rq.Choices[0].Logprobs.Tokens[i] != tok {
			flipped++
		}
		drift += abs(ra.Choices[0].Logprobs.TokenLogprobs[i] - rq.Choices[0].Logprobs.TokenLogprobs[i])
	}
	t.Logf("fp8 with flip rate 0.1: %d of 64 tokens flipped, mean |Δlogprob| %.4f", flipped, drift/64)
	if flipped == 0 || flipped > 20 {
		t.Errorf("fp8 flipped %d of 64 tokens, want a small nonzero number (rate 0.1)", flipped)
	}
	if drift/64 < 0.005 {
		t.Errorf("fp8 moved logprobs by %.4f on average, want a measurable drift", drift/64)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func ptr[T any](v T) *T { return &v }
