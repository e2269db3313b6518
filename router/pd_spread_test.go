package router

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// 1. 2 prefill + 2 decode workers under round_robin: equal counts in both
// pools (router metrics), a real KV pull per request (decode engines'
// metrics), and per-run usage counted for PD requests.
func TestPDAcceptanceRoundRobinBothPools(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 2, fast), e.pdSims(sim.RoleDecode, 2, fast)
	_, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	fanOut(40, 4, func(i int) {
		res := e.try(base+"/v1/completions", usageCompletion(fmt.Sprint("spread me ", i), 4, i%2 == 0), RunIDHeader, "pd-run")
		if res.Status != 200 || res.Err != nil {
			t.Errorf("request %d: status %d, err %v: %s", i, res.Status, res.Err, res.Body)
		}
	})
	fams := e.scrape(base)
	for _, w := range P {
		if n := fams.Sum("vllm_router_pd_prefill_requests_total", map[string]string{"worker": w.URL}); n != 20 {
			t.Errorf("prefill %s got %v legs, want 20", w.URL, n)
		}
		if n := fams.Sum("vllm_router_policy_decisions_total", map[string]string{"policy": "round_robin", "worker": w.URL}); n != 20 {
			t.Errorf("round_robin decisions for prefill %s = %v, want 20", w.URL, n)
		}
	}
	for _, w := range D {
		if n := fams.Sum("vllm_router_pd_decode_requests_total", map[string]string{"worker": w.URL}); n != 20 {
			t.Errorf("decode %s got %v legs, want 20", w.URL, n)
		}
	}
	if n := e.simMetric(D, "vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); n != 40 {
		t.Errorf("decode engines pulled KV %v times, want 40 (one per request)", n)
	}
	if n := fams.Sum("vllm_router_pd_requests_total", map[string]string{"route": "/v1/completions"}); n != 40 {
		t.Errorf("pd_requests_total = %v, want 40", n)
	}
	// Per-run counters are recorded when the handler returns, which can be a
	// moment after the client read the last byte: poll for them.
	routertest.Eventually(t, 5*time.Second, func() error {
		run := e.scrape(base)
		if n := run.Sum("vllm_router_run_requests_total", map[string]string{"run_id": "pd-run"}); n != 40 {
			return fmt.Errorf("run_requests_total = %v, want 40", n)
		}
		if n := run.Sum("vllm_router_run_completion_tokens_total", map[string]string{"run_id": "pd-run"}); n != 40*4 {
			return fmt.Errorf("run_completion_tokens_total = %v, want %d", n, 40*4)
		}
		return nil
	})

	// Any policy per pool, least_loaded included.
	_, base2 := e.router(pdSimConfig(P, D, "least_loaded", "power_of_two"))
	fanOut(20, 4, func(i int) {
		if res := e.try(base2+"/v1/completions", completion(fmt.Sprint("other policies ", i), 4, true)); res.Status != 200 || res.Err != nil {
			t.Errorf("request %d: status %d, err %v: %s", i, res.Status, res.Err, res.Body)
		}
	})
	fams2 := e.scrape(base2)
	for _, w := range append(append([]*simtest.Worker{}, P...), D...) {
		if fams2.Sum("vllm_router_processed_requests_total", map[string]string{"worker": w.URL}) == 0 {
			t.Errorf("worker %s got no leg under least_loaded/power_of_two", w.URL)
		}
	}
}

// 3. With routing_threshold 50 (estimated tokens), prompts below never reach
// a prefill worker; prompts at or above always do.
func TestPDAcceptanceRoutingThreshold(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 1, fast), e.pdSims(sim.RoleDecode, 1, fast)
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	cfg.RoutingThreshold = 50
	_, base := e.router(cfg)
	long := tokenizer.Generate(rand.New(rand.NewPCG(5, 6)), 400)
	text := func(chars int) string { return long[:chars] }
	chat := func(content string) string {
		b, _ := json.Marshal(map[string]any{"model": simModel, "max_tokens": 3, "temperature": 0,
			"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": content}}}}})
		return string(b)
	}
	ids := func(n int) string {
		toks := make([]int, n)
		for i := range toks {
			toks[i] = 1000 + i
		}
		b, _ := json.Marshal(map[string]any{"model": simModel, "prompt": toks, "max_tokens": 3})
		return string(b)
	}
	for _, tc := range []struct {
		name, route, body string
		pd                bool
	}{
		{"49 tokens of text", "/v1/completions", completion(text(199), 3, false), false},
		{"50 tokens of text", "/v1/completions", completion(text(200), 3, false), true},
		{"100 tokens of text, streamed", "/v1/completions", completion(text(400), 3, true), true},
		{"chat below", "/v1/chat/completions", chat(text(120)), false},
		{"chat at", "/v1/chat/completions", chat(text(203)), true},
		{"49 token ids", "/v1/completions", ids(49), false},
		{"50 token ids", "/v1/completions", ids(50), true},
	} {
		before := e.simMetric(P, "vllm:request_success_total", nil)
		if res := e.Post(base+tc.route, tc.body); res.Status != 200 || res.Err != nil {
			t.Fatalf("%s: status %d, err %v: %s", tc.name, res.Status, res.Err, res.Body)
		}
		reached := e.simMetric(P, "vllm:request_success_total", nil) - before
		if want := map[bool]float64{true: 1, false: 0}[tc.pd]; reached != want {
			t.Errorf("%s: the prefill engine served %v requests, want %v", tc.name, reached, want)
		}
	}
	if n := e.scrape(base).Sum("vllm_router_pd_local_prefill_total", map[string]string{"reason": localBelowThreshold}); n != 3 {
		t.Errorf("pd_local_prefill_total{reason=below_threshold} = %v, want 3", n)
	}
}
