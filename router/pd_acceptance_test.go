package router

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/adapter/scrape"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/sim/tokenizer"
)

// Acceptance tests of issue 4 (router PD mode), against real simulated
// prefill and decode engines with their loopback KV side channel.

func pdSims(t *testing.T, role sim.Role, n int, p sim.Profile) []*simtest.Worker {
	t.Helper()
	ws := make([]*simtest.Worker, n)
	for i := range ws {
		ws[i] = simtest.StartStoppable(t, sim.Options{Engine: engine.Config{Model: simModel}, Role: role, Profile: p})
	}
	return ws
}

func pdSimConfig(prefill, decode []*simtest.Worker, prefillPolicy, decodePolicy string) Config {
	c := pdTestConfig("nixl", urls(prefill), urls(decode))
	c.PrefillPolicy, c.DecodePolicy = prefillPolicy, decodePolicy
	return c
}

// pdClient bounds every test request: a request that takes longer hung.
var pdClient = &http.Client{Timeout: 15 * time.Second}

// pdSend posts body and reads the whole answer; err is set for transport
// errors, timeouts and truncated bodies (a stream cut by the router).
func pdSend(url, body string, headers ...string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := pdClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func scrapeRouter(t *testing.T, base string) scrape.Families {
	t.Helper()
	fams, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func simMetric(t *testing.T, ws []*simtest.Worker, name string, match map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, w := range ws {
		fams, err := scrape.Fetch(context.Background(), http.DefaultClient, w.URL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sum += fams.Sum(name, match)
	}
	return sum
}

// usageCompletion is completion with usage in streams too (the prefill leg
// must drop stream_options; the decode leg keeps it).
func usageCompletion(prompt string, maxTokens int, stream bool) string {
	b := map[string]any{"model": simModel, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0, "ignore_eos": true, "stream": stream}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	raw, _ := json.Marshal(b)
	return string(raw)
}

// 1. 2 prefill + 2 decode workers under round_robin: equal counts in both
// pools (router metrics), a real KV pull per request (decode engines'
// metrics), and per-run usage counted for PD requests.
func TestPDAcceptanceRoundRobinBothPools(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 2, fast), pdSims(t, sim.RoleDecode, 2, fast)
	_, base := startRouter(t, pdSimConfig(P, D, "round_robin", "round_robin"))
	fanOut(40, 4, func(i int) {
		s, body, err := pdSend(base+"/v1/completions", usageCompletion(fmt.Sprint("spread me ", i), 4, i%2 == 0), RunIDHeader, "pd-run")
		if s != 200 || err != nil {
			t.Errorf("request %d: status %d, err %v: %s", i, s, err, body)
		}
	})
	fams := scrapeRouter(t, base)
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
	if n := simMetric(t, D, "vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); n != 40 {
		t.Errorf("decode engines pulled KV %v times, want 40 (one per request)", n)
	}
	if n := fams.Sum("vllm_router_pd_requests_total", map[string]string{"route": "/v1/completions"}); n != 40 {
		t.Errorf("pd_requests_total = %v, want 40", n)
	}
	if n := fams.Sum("vllm_router_run_requests_total", map[string]string{"run_id": "pd-run"}); n != 40 {
		t.Errorf("run_requests_total = %v, want 40", n)
	}
	if n := fams.Sum("vllm_router_run_completion_tokens_total", map[string]string{"run_id": "pd-run"}); n != 40*4 {
		t.Errorf("run_completion_tokens_total = %v, want %d", n, 40*4)
	}

	// Any policy per pool, least_loaded included.
	_, base2 := startRouter(t, pdSimConfig(P, D, "least_loaded", "power_of_two"))
	fanOut(20, 4, func(i int) {
		if s, body, err := pdSend(base2+"/v1/completions", completion(fmt.Sprint("other policies ", i), 4, true)); s != 200 || err != nil {
			t.Errorf("request %d: status %d, err %v: %s", i, s, err, body)
		}
	})
	fams2 := scrapeRouter(t, base2)
	for _, w := range append(append([]*simtest.Worker{}, P...), D...) {
		if fams2.Sum("vllm_router_processed_requests_total", map[string]string{"worker": w.URL}) == 0 {
			t.Errorf("worker %s got no leg under least_loaded/power_of_two", w.URL)
		}
	}
}

// 2. Killing one prefill worker, then one decode worker, mid-run: no
// request hangs; once the router has seen the death, later requests use the
// survivor.
func TestPDAcceptanceKillWorkerMidRun(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	for _, role := range []string{"prefill", "decode"} {
		t.Run(role, func(t *testing.T) {
			P, D := pdSims(t, sim.RolePrefill, 2, fast), pdSims(t, sim.RoleDecode, 2, fast)
			victim, survivor, pool := P[0], P[1], "vllm_router_pd_prefill_requests_total"
			if role == "decode" {
				victim, survivor, pool = D[0], D[1], "vllm_router_pd_decode_requests_total"
			}
			r, base := startRouter(t, pdSimConfig(P, D, "round_robin", "round_robin"))

			var done, failed atomic.Int64
			killed := make(chan struct{})
			var killer sync.WaitGroup
			killer.Go(func() {
				for done.Load() < 10 {
					time.Sleep(time.Millisecond) // polling progress, not synchronising
				}
				victim.Stop()
				close(killed)
			})
			fanOut(40, 4, func(i int) {
				s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("kill run ", i), 32, i%2 == 0))
				done.Add(1)
				if err != nil && strings.Contains(err.Error(), "Timeout") {
					t.Errorf("request %d hung: %v", i, err)
				}
				if s != 200 || err != nil {
					failed.Add(1)
					t.Logf("request %d: status %d err %v %s", i, s, err, body)
				}
			})
			killer.Wait()
			<-killed
			t.Logf("%s worker killed after 10 of 40 requests; %d failed", role, failed.Load())
			// A dead prefill worker is retried around (and a pull from it falls
			// back to local prefill): nothing fails. A dead decode worker can
			// only cut the streams it was serving (≤ the 4 in flight).
			if role == "prefill" && failed.Load() != 0 {
				t.Errorf("%d requests failed after a prefill worker died; want 0 (retried on the other)", failed.Load())
			}
			if failed.Load() > 4 {
				t.Errorf("%d requests failed; at most the 4 in flight on the killed worker may", failed.Load())
			}

			eventually(t, 5*time.Second, func() error {
				for _, w := range r.Workers().Workers {
					if w.URL == victim.URL && w.Healthy {
						return fmt.Errorf("router still sees %s as healthy", w.URL)
					}
				}
				return nil
			})
			before := scrapeRouter(t, base)
			for i := range 10 {
				if s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("after kill ", i), 4, true)); s != 200 || err != nil {
					t.Errorf("request after the kill: status %d, err %v: %s", s, err, body)
				}
			}
			after := scrapeRouter(t, base)
			delta := func(w *simtest.Worker) float64 {
				m := map[string]string{"worker": w.URL}
				return after.Sum(pool, m) - before.Sum(pool, m)
			}
			if delta(victim) != 0 || delta(survivor) != 10 {
				t.Errorf("after the kill: %v legs to the dead %s worker, %v to the survivor; want 0 and 10", delta(victim), role, delta(survivor))
			}
		})
	}
}

// 3. With routing_threshold 50 (estimated tokens), prompts below never reach
// a prefill worker; prompts at or above always do.
func TestPDAcceptanceRoutingThreshold(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	cfg.RoutingThreshold = 50
	_, base := startRouter(t, cfg)
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
		before := simMetric(t, P, "vllm:request_success_total", nil)
		if s, body, err := pdSend(base+tc.route, tc.body); s != 200 || err != nil {
			t.Fatalf("%s: status %d, err %v: %s", tc.name, s, err, body)
		}
		reached := simMetric(t, P, "vllm:request_success_total", nil) - before
		if want := map[bool]float64{true: 1, false: 0}[tc.pd]; reached != want {
			t.Errorf("%s: the prefill engine served %v requests, want %v", tc.name, reached, want)
		}
	}
	if n := scrapeRouter(t, base).Sum("vllm_router_pd_local_prefill_total", map[string]string{"reason": localBelowThreshold}); n != 3 {
		t.Errorf("pd_local_prefill_total{reason=below_threshold} = %v, want 3", n)
	}
}

// pdTiming has steps long enough to dominate scheduling noise and a
// transfer large enough to see in TTFT.
var pdTiming = sim.Profile{Name: "pd-timing", StepBaseMs: 4, PrefillUsPerToken: 20, DecodeUsPerSeq: 100,
	KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 20, NumGPUBlocks: 4096}

// streamTimed streams a completion and returns its text and when the first
// and last content chunks arrived, from the moment the request was sent.
func streamTimed(t *testing.T, url, body string) (string, time.Duration, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := pdClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	var text strings.Builder
	var first, last time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Choices) == 0 {
			continue
		}
		at := time.Since(start)
		if first == 0 {
			first = at
		}
		last = at
		text.WriteString(c.Choices[0].Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return text.String(), first, last
}

// 4. A disaggregated stream equals the collocated answer, arrives chunk by
// chunk, and its TTFT is prefill + modelled transfer + one decode step.
func TestPDAcceptanceStreamMatchesCollocated(t *testing.T) {
	P, D := pdSims(t, sim.RolePrefill, 1, pdTiming), pdSims(t, sim.RoleDecode, 1, pdTiming)
	coll := pdSims(t, sim.RoleCollocated, 1, pdTiming)
	_, base := startRouter(t, pdSimConfig(P, D, "round_robin", "round_robin"))
	const n, tokens = 2000, 24
	prompt := tokenizer.Generate(rand.New(rand.NewPCG(7, 8)), n)
	body := completion(prompt, tokens, true)

	want, collTTFT, _ := streamTimed(t, coll[0].URL+"/v1/completions", body)
	got, ttft, last := streamTimed(t, base+"/v1/completions", body)
	if got != want || got == "" {
		t.Fatalf("disaggregated text differs from collocated:\n%q\n%q", got, want)
	}
	// True streaming: the chunks are spread over the decode steps, not
	// delivered together at the end (allow half the modelled decode time).
	decodeTime := time.Duration(tokens-1) * pdTiming.StepTime(0, 1, 0)
	if last-ttft < decodeTime/2 {
		t.Errorf("first chunk at %v, last at %v: %v apart, want ≥ %v (the router held the stream back)", ttft, last, last-ttft, decodeTime/2)
	}
	// TTFT = prefill step on P + KV transfer + one step on D computing the
	// last prompt token. Tolerance: 2 ms below (clock rounding), up to
	// 30 ms + 50 % above (two HTTP hops through the router, -race, 2 shared cores).
	predicted := pdTiming.StepTime(n, 0, 0) + pdTiming.TransferTime(n) + pdTiming.StepTime(1, 0, 0)
	t.Logf("TTFT collocated %v, disaggregated %v (model %v)", collTTFT, ttft, predicted)
	if ttft < predicted-2*time.Millisecond || ttft > predicted+30*time.Millisecond+predicted/2 {
		t.Errorf("disaggregated TTFT %v, model %v (tolerance [model − 2 ms, model + 30 ms + 50%%])", ttft, predicted)
	}
	if ok := simMetric(t, D, "vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); ok != 1 {
		t.Errorf("decode engine made %v good pulls, want 1", ok)
	}
}

// 5. A stalled prefill worker gives pd_connector_timeout (not a hang) while
// only it holds load; with a second prefill worker the requests succeed and
// the stalled one's open circuit gets no more traffic; with
// pd_fallback_local the decode worker prefills.
func TestPDAcceptanceStalledPrefill(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	t.Run("timeout", func(t *testing.T) {
		P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
		P[0].SetFaults(sim.Faults{Stall: true})
		cfg := pdSimConfig(P, D, "round_robin", "round_robin")
		cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries = 0.2, 2
		r, base := startRouter(t, cfg)
		type result struct {
			status int
			body   string
			err    error
			took   time.Duration
		}
		res := make(chan result, 1)
		go func() {
			start := time.Now()
			s, b, err := pdSend(base+"/v1/completions", completion("stall me", 4, true), "X-Request-Id", "stall-1")
			res <- result{s, b, err, time.Since(start)}
		}()
		eventually(t, 5*time.Second, func() error {
			if l := r.Loads(); l[P[0].URL] != 1 || l[D[0].URL] != 0 {
				return fmt.Errorf("loads %v: want 1 on the stalled prefill worker, 0 on decode", l)
			}
			return nil
		})
		got := <-res
		if got.err != nil || got.status != http.StatusGatewayTimeout {
			t.Fatalf("status %d err %v: %s; want 504", got.status, got.err, got.body)
		}
		var e struct {
			Error struct {
				Type, Leg, RequestID string
				TimeoutSecs          float64 `json:"timeout_secs"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got.body), &e); err != nil {
			t.Fatal(err)
		}
		if e.Error.Type != ErrTypePDConnectorTimeout || e.Error.Leg != "prefill" || e.Error.TimeoutSecs != 0.2 {
			t.Errorf("error %s: want type pd_connector_timeout, leg prefill, timeout_secs 0.2", got.body)
		}
		if !strings.Contains(got.body, `"request_id":"stall-1"`) {
			t.Errorf("error %s does not name the request id", got.body)
		}
		// Two attempts of 0.2 s plus a few ms of backoff: far from a hang.
		if got.took > 5*time.Second {
			t.Errorf("took %v", got.took)
		}
	})
	t.Run("retried on the other worker, circuit opens", func(t *testing.T) {
		P, D := pdSims(t, sim.RolePrefill, 2, fast), pdSims(t, sim.RoleDecode, 1, fast)
		P[0].SetFaults(sim.Faults{Stall: true})
		cfg := pdSimConfig(P, D, "round_robin", "round_robin")
		cfg.PrefillTimeoutSecs, cfg.CircuitBreaker.FailureThreshold = 0.1, 2
		r, base := startRouter(t, cfg)
		for i := range 8 {
			if s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("one stalled ", i), 4, false)); s != 200 || err != nil {
				t.Fatalf("request %d: status %d err %v: %s", i, s, err, body)
			}
		}
		if st := r.PrefillPool().Get(P[0].URL).Breaker().State(); st != BreakerOpen {
			t.Errorf("stalled prefill worker's circuit is %v, want open", st)
		}
		if n := testutil.ToFloat64(r.pd.m.prefillReqs.WithLabelValues(P[0].URL)); n != 2 {
			t.Errorf("stalled worker got %v prefill legs; want 2 (then its open circuit stops dispatch)", n)
		}
	})
	t.Run("fallback to local prefill", func(t *testing.T) {
		P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
		coll := pdSims(t, sim.RoleCollocated, 1, fast)
		P[0].SetFaults(sim.Faults{Stall: true})
		cfg := pdSimConfig(P, D, "round_robin", "round_robin")
		cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries, cfg.PDFallbackLocal = 0.1, 1, true
		r, base := startRouter(t, cfg)
		body := completion("fall back", 6, false)
		_, want, _ := pdSend(coll[0].URL+"/v1/completions", body)
		s, got, err := pdSend(base+"/v1/completions", body)
		if s != 200 || err != nil || textOf(t, got) != textOf(t, want) {
			t.Fatalf("status %d err %v: %s; want the collocated text %s", s, err, got, want)
		}
		if n := testutil.ToFloat64(r.pd.m.localPrefill.WithLabelValues(localPrefillFailed)); n != 1 {
			t.Errorf("pd_local_prefill_total{reason=prefill_failed} = %v, want 1", n)
		}
	})
}

func textOf(t *testing.T, body string) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("completion %q: %v", body, err)
	}
	return c.Choices[0].Text
}

// 6. Load is exact on both legs: while a decode stream is open the decode
// worker holds it and the prefill worker does not; every load is 0 after
// the client leaves (startRouter's cleanup checks all pools after every test).
func TestPDAcceptanceDecodeLoadUntilStreamEnds(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
	D[0].SetFaults(sim.Faults{Stall: true, StallAfterTokens: 2})
	r, base := startRouter(t, pdSimConfig(P, D, "round_robin", "round_robin"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(completion("hold the stream", 16, true)))
	resp, err := pdClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for chunks := 0; chunks < 2 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			chunks++
		}
	}
	if l := r.Loads(); l[D[0].URL] != 1 || l[P[0].URL] != 0 {
		t.Fatalf("mid-stream loads %v: want 1 on decode, 0 on prefill", l)
	}
	cancel()
	waitLoadsZero(t, r)
}

// A decode worker failing before its first byte is retried on another; an
// empty pool answers 503 naming the pool.
func TestPDDecodeRetryAndEmptyPools(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 2, fast)
	D[0].SetFaults(sim.Faults{ErrorRates: map[int]float64{503: 1}})
	r, base := startRouter(t, pdSimConfig(P, D, "round_robin", "round_robin"))
	for i := range 6 {
		if s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("retry decode ", i), 4, true)); s != 200 || err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, s, err, body)
		}
	}
	if n := testutil.ToFloat64(r.pd.m.decodeErrors.WithLabelValues(D[0].URL)); n == 0 {
		t.Error("no decode errors counted for the failing decode worker")
	}
	for _, tc := range []struct {
		pool *Pool
		urls []string
		name string
	}{{r.DecodePool(), urls(D), "decode"}, {r.PrefillPool(), urls(P), "prefill"}} {
		for _, u := range tc.urls {
			tc.pool.Remove(u)
		}
		s, body, _ := pdSend(base+"/v1/completions", completion("nobody home", 4, false))
		if s != 503 || errorType(t, body) != ErrTypeNoAvailableWorkers || !strings.Contains(body, `pool \"`+tc.name+`\"`) {
			t.Errorf("empty %s pool: status %d %s; want 503 naming the pool", tc.name, s, body)
		}
		for _, u := range tc.urls {
			tc.pool.Add(u)
		}
	}
}

// An open prefill circuit gets no traffic, yet is not left "fake-dead"
// while pd_fallback_local serves every request from decode: each request
// still asks the prefill pool, so after the open period the worker is tried
// again (half-open) and its circuit closes once it answers.
func TestPDOpenPrefillCircuitRecovers(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
	P[0].SetFaults(sim.Faults{ErrorRates: map[int]float64{500: 1}})
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	cfg.PDFallbackLocal, cfg.CircuitBreaker.FailureThreshold, cfg.CircuitBreaker.SuccessThreshold = true, 2, 2
	r, base := startRouter(t, cfg, WithClock(clock))
	legs := func() float64 { return testutil.ToFloat64(r.pd.m.prefillReqs.WithLabelValues(P[0].URL)) }
	for i := range 5 {
		if s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("circuit ", i), 4, false)); s != 200 || err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, s, err, body)
		}
	}
	if n, st := legs(), r.PrefillPool().Get(P[0].URL).Breaker().State(); n != 2 || st != BreakerOpen {
		t.Fatalf("failing prefill worker got %v legs, circuit %v; want 2 then open (no dispatch while open)", n, st)
	}
	P[0].SetFaults(sim.Faults{})
	offset.Store(int64(61 * time.Second)) // past circuit_breaker.timeout_duration_secs (60)
	for i := range 2 {
		if s, body, err := pdSend(base+"/v1/completions", completion(fmt.Sprint("recovered ", i), 4, false)); s != 200 || err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, s, err, body)
		}
	}
	if n, st := legs(), r.PrefillPool().Get(P[0].URL).Breaker().State(); n != 4 || st != BreakerClosed {
		t.Fatalf("after the open period: %v legs, circuit %v; want 4 and closed", n, st)
	}
}
