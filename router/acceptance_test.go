package router

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/target/scrape"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Acceptance tests of issue 3, against real simulated vLLM engines.

// 1. round_robin over 3 workers: 300 requests → 100 each, read from the
// router's /metrics.
func TestAcceptanceRoundRobinEvenSplit(t *testing.T) {
	ws := simWorkers(t, 3)
	_, base := startRouter(t, testConfig("round_robin", urls(ws)...))
	fanOut(300, 10, func(i int) {
		if s, body, _ := post(t, base+"/v1/completions", completion(fmt.Sprint("hello ", i), 4, false)); s != 200 {
			t.Errorf("status %d: %s", s, body)
		}
	})
	fams, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if n := fams.Sum("vllm_router_processed_requests_total", map[string]string{"worker": w.URL}); n != 100 {
			t.Errorf("worker %s processed %v, want 100", w.URL, n)
		}
		if n := fams.Sum("vllm_router_policy_decisions_total", map[string]string{"policy": "round_robin", "worker": w.URL}); n != 100 {
			t.Errorf("decisions for %s = %v, want 100", w.URL, n)
		}
	}
}

// sharedPrefixTrace is groups × perGroup prompts: a long per-group prefix
// plus a short unique question, in a seeded shuffled order.
func sharedPrefixTrace(groups, perGroup int) (prompts []string, group []int) {
	r := rand.New(rand.NewPCG(3, 4))
	prefixes := make([]string, groups)
	for g := range prefixes {
		prefixes[g] = tokenizer.Generate(r, 400)
	}
	for g := range groups {
		for range perGroup {
			prompts = append(prompts, prefixes[g]+" "+tokenizer.Generate(r, 20))
			group = append(group, g)
		}
	}
	r.Shuffle(len(prompts), func(i, j int) {
		prompts[i], prompts[j] = prompts[j], prompts[i]
		group[i], group[j] = group[j], group[i]
	})
	return prompts, group
}

// prefixHitRate is hits/queries summed over the workers' own metrics.
func prefixHitRate(t *testing.T, ws []*simtest.Worker) float64 {
	t.Helper()
	var hits, queries float64
	for _, w := range ws {
		fams, err := scrape.Fetch(context.Background(), http.DefaultClient, w.URL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		hits += fams.Sum("vllm:prefix_cache_hits_total", nil)
		queries += fams.Sum("vllm:prefix_cache_queries_total", nil)
	}
	if queries == 0 {
		t.Fatal("workers report no prefix-cache queries")
	}
	return hits / queries
}

// 2. cache_aware keeps prefix groups on one worker while balanced, spreads
// past the gate, and beats round_robin's prefix-cache hit rate on the same trace.
func TestAcceptanceCacheAwareSharedPrefix(t *testing.T) {
	prompts, group := sharedPrefixTrace(6, 6)
	run := func(policyName string) (float64, map[int]map[string]bool) {
		ws := simWorkers(t, 3)
		r, base := startRouter(t, testConfig(policyName, urls(ws)...))
		owners := map[int]map[string]bool{}
		for i, p := range prompts { // one at a time: loads stay balanced
			before := processedBy(r, ws)
			if s, body, _ := post(t, base+"/v1/completions", completion(p, 2, false)); s != 200 {
				t.Fatalf("status %d: %s", s, body)
			}
			after := processedBy(r, ws)
			for u := range after {
				if after[u] > before[u] {
					if owners[group[i]] == nil {
						owners[group[i]] = map[string]bool{}
					}
					owners[group[i]][u] = true
				}
			}
		}
		return prefixHitRate(t, ws), owners
	}
	caRate, caOwners := run("cache_aware")
	rrRate, _ := run("round_robin")
	for g, o := range caOwners {
		if len(o) != 1 {
			t.Errorf("cache_aware spread prefix group %d over %d workers while balanced", g, len(o))
		}
	}
	if caRate <= rrRate {
		t.Errorf("prefix-cache hit rate: cache_aware %.3f, round_robin %.3f; want cache_aware higher", caRate, rrRate)
	}
	t.Logf("prefix-cache hit rate on the same trace: cache_aware %.3f, round_robin %.3f", caRate, rrRate)

	// Past the gate: one hot group, many concurrent requests, each held long
	// enough (200 ms of added latency) that loads really build up.
	ws := simWorkers(t, 3)
	for _, w := range ws {
		w.SetFaults(sim.Faults{AddedLatency: 200 * time.Millisecond})
	}
	cfg := testConfig("cache_aware", urls(ws)...)
	cfg.BalanceAbsThreshold, cfg.BalanceRelThreshold = 2, 1.5
	r, base := startRouter(t, cfg)
	fanOut(24, 24, func(i int) {
		if s, body, _ := post(t, base+"/v1/completions", completion(prompts[0]+fmt.Sprint(" q", i), 2, false)); s != 200 {
			t.Errorf("status %d: %s", s, body)
		}
	})
	served := 0
	for _, n := range processedBy(r, ws) {
		if n > 0 {
			served++
		}
	}
	if served < 2 || testutil.ToFloat64(r.m.lbEvents) == 0 {
		t.Errorf("hot group under load went to %d worker(s) with %v load-balancing events; want it spread by the gate",
			served, testutil.ToFloat64(r.m.lbEvents))
	}
}

// 3. Killing one of three workers mid-run: nothing hangs, later requests go
// to the live ones, health and breaker show it, and it rejoins after restart.
func TestAcceptanceKillWorkerMidRun(t *testing.T) {
	ws := simWorkers(t, 3)
	cfg := testConfig("round_robin", urls(ws)...)
	cfg.HealthCheck.FailureThreshold, cfg.HealthCheck.SuccessThreshold = 2, 2
	cfg.CircuitBreaker = CircuitBreakerConfig{FailureThreshold: 1, SuccessThreshold: 1, TimeoutDurationSecs: 0.3}
	cfg.Retry.MaxRetries = 3
	r, base := startRouter(t, cfg)
	dead := ws[2]
	client := &http.Client{Timeout: 10 * time.Second} // a request hitting this would be a hang

	var killOnce sync.Once
	var mu sync.Mutex
	var failures []string
	fanOut(120, 6, func(i int) {
		if i == 40 {
			killOnce.Do(dead.Stop)
		}
		resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(completion(fmt.Sprint("q ", i), 16, i%2 == 0)))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			if strings.Contains(err.Error(), "Client.Timeout") {
				t.Errorf("request %d hung: %v", i, err)
			}
			mu.Lock()
			failures = append(failures, err.Error())
			mu.Unlock()
		} else if resp.StatusCode != 200 {
			t.Errorf("request %d: status %d", i, resp.StatusCode)
		}
	})
	// Only streams cut by the kill may fail, and only a handful.
	if len(failures) > 6 {
		t.Errorf("%d requests failed around the kill: %v", len(failures), failures)
	}
	eventually(t, 5*time.Second, func() error {
		if st := workerStatus(t, base, dead.URL); st.Healthy || st.Circuit != "open" {
			return fmt.Errorf("dead worker shows healthy=%v circuit=%s", st.Healthy, st.Circuit)
		}
		return nil
	})
	fams, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if fams.Sum("vllm_router_worker_health", map[string]string{"worker": dead.URL}) != 0 ||
		fams.Sum("vllm_router_cb_state", map[string]string{"worker": dead.URL}) != float64(BreakerOpen) {
		t.Error("metrics do not show the dead worker unhealthy with an open circuit")
	}
	deadBefore := processedBy(r, ws)[dead.URL]
	for i := range 30 {
		if s, body, _ := post(t, base+"/v1/completions", completion(fmt.Sprint("after ", i), 4, false)); s != 200 {
			t.Fatalf("after the kill: %d %s", s, body)
		}
	}
	if n := processedBy(r, ws)[dead.URL]; n != deadBefore {
		t.Errorf("dead worker got %v more attempts after being marked", n-deadBefore)
	}

	dead.Restart()
	eventually(t, 10*time.Second, func() error {
		post(t, base+"/v1/completions", completion("rejoin", 2, false))
		st := workerStatus(t, base, dead.URL)
		if !st.Healthy || st.Circuit != "closed" || processedBy(r, ws)[dead.URL] == deadBefore {
			return fmt.Errorf("restarted worker: healthy=%v circuit=%s", st.Healthy, st.Circuit)
		}
		return nil
	})
}

// 5. A saturated pool answers 429 queue_full or 503 pool_exhausted — never
// a hang or a generic 500.
func TestAcceptanceSaturatedPool(t *testing.T) {
	ws := simWorkers(t, 2)
	for _, w := range ws {
		w.SetFaults(sim.Faults{AddedLatency: 300 * time.Millisecond})
	}
	cfg := testConfig("least_loaded", urls(ws)...)
	cfg.MaxConcurrentRequests, cfg.QueueSize, cfg.QueueTimeoutSecs = 4, 4, 5
	_, base := startRouter(t, cfg)
	client := &http.Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	statuses := map[string]int{}
	fanOut(32, 32, func(i int) {
		resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(completion("x", 2, false)))
		if err != nil {
			t.Errorf("request %d: %v", i, err)
			return
		}
		body := readAll(t, resp)
		key := fmt.Sprint(resp.StatusCode)
		if resp.StatusCode != 200 {
			key += " " + errorType(t, body)
		}
		mu.Lock()
		statuses[key]++
		mu.Unlock()
	})
	if statuses["429 queue_full"] == 0 || statuses["200"] == 0 || statuses["200"]+statuses["429 queue_full"] != 32 {
		t.Errorf("statuses %v: want only 200 and 429 queue_full, both present", statuses)
	}

	// Workers refusing everything as overloaded: retries run out → pool_exhausted.
	for _, w := range ws {
		w.SetFaults(sim.Faults{ErrorRates: map[int]float64{503: 1}})
	}
	if s, body, _ := post(t, base+"/v1/completions", completion("x", 2, false)); s != 503 || errorType(t, body) != ErrTypePoolExhausted {
		t.Errorf("overloaded workers → %d %s, want 503 pool_exhausted", s, body)
	}
}
