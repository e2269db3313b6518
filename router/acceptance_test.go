package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Acceptance tests of issue 3, against real simulated vLLM engines.

// 1. round_robin over 3 workers: 300 requests → 100 each, read from the
// router's /metrics.
func TestAcceptanceRoundRobinEvenSplit(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(3)
	_, base := e.router(testConfig("round_robin", urls(ws)...))
	fanOut(300, 10, func(i int) {
		if res := e.try(base+"/v1/completions", completion(fmt.Sprint("hello ", i), 4, false)); res.Status != 200 {
			t.Errorf("status %d %v: %s", res.Status, res.Err, res.Body)
		}
	})
	fams := e.scrape(base)
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
func (e *env) prefixHitRate(ws []*simtest.Worker) float64 {
	e.t.Helper()
	hits := e.simMetric(ws, "vllm:prefix_cache_hits_total", nil)
	queries := e.simMetric(ws, "vllm:prefix_cache_queries_total", nil)
	if queries == 0 {
		e.t.Fatal("workers report no prefix-cache queries")
	}
	return hits / queries
}

// 2. cache_aware keeps prefix groups on one worker while balanced, spreads
// past the gate, and beats round_robin's prefix-cache hit rate on the same trace.
func TestAcceptanceCacheAwareSharedPrefix(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	prompts, group := sharedPrefixTrace(6, 6)
	run := func(policyName string) (float64, map[int]map[string]bool) {
		ws := e.simWorkers(3)
		r, base := e.router(testConfig(policyName, urls(ws)...))
		owners := map[int]map[string]bool{}
		for i, p := range prompts { // one at a time: loads stay balanced
			before := processedBy(r, ws)
			if res := e.Post(base+"/v1/completions", completion(p, 2, false)); res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
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
		return e.prefixHitRate(ws), owners
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

	// Past the gate: requests of one hot group pile up on stalled engines,
	// one more at a time, so the load imbalance builds exactly as counted
	// (no reliance on concurrent requests overlapping in time).
	ws := e.simWorkers(3)
	for _, w := range ws {
		w.SetFaults(sim.Faults{Stall: true})
	}
	cfg := testConfig("cache_aware", urls(ws)...)
	cfg.BalanceAbsThreshold, cfg.BalanceRelThreshold = 2, 1.5
	r, base := e.router(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var held []<-chan routertest.Response
	for i := range 9 {
		held = append(held, e.Go(ctx, http.MethodPost, base+"/v1/completions", completion(prompts[0]+fmt.Sprint(" q", i), 2, false)))
		waitTotalLoad(t, r, int64(i+1))
	}
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
	cancel()
	for _, h := range held {
		<-h
	}
}

// waitTotalLoad polls until the loads over every worker sum to want.
func waitTotalLoad(t *testing.T, r *Router, want int64) {
	t.Helper()
	routertest.Eventually(t, 10*time.Second, func() error {
		var sum int64
		for _, n := range r.Loads() {
			sum += n
		}
		if sum != want {
			return fmt.Errorf("total load %d, want %d (%v)", sum, want, r.Loads())
		}
		return nil
	})
}

// 3. Killing one of three workers mid-run: nothing hangs, later requests go
// to the live ones, health and breaker show it, and it rejoins after restart.
// The engines, router and client share a bubble's in-memory network, so the
// health checks, the breaker's open period and the engines' steps all run
// on the fake clock: two probes 0.25 s apart mark the dead worker however
// busy the machine is, and nothing live is ever marked by a slow probe.
func TestAcceptanceKillWorkerMidRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := bubble(t)
		ws := e.simWorkers(3)
		cfg := testConfig("round_robin", urls(ws)...)
		const interval = 250 * time.Millisecond
		cfg.HealthCheck.IntervalSecs, cfg.HealthCheck.TimeoutSecs = interval.Seconds(), interval.Seconds()
		cfg.HealthCheck.FailureThreshold, cfg.HealthCheck.SuccessThreshold = 2, 2
		// The dead worker's circuit stays open for the run: it half-opens
		// only after the restart below, 60 s later on the fake clock.
		cfg.CircuitBreaker = CircuitBreakerConfig{FailureThreshold: 1, SuccessThreshold: 1, TimeoutDurationSecs: 60}
		cfg.Retry.MaxRetries = 3
		r, base := e.router(cfg)
		dead := ws[2]

		var killOnce sync.Once
		var mu sync.Mutex
		var failures []string
		fanOut(120, 6, func(i int) {
			if i == 40 {
				killOnce.Do(dead.Stop)
			}
			res := e.try(base+"/v1/completions", completion(fmt.Sprint("q ", i), 16, i%2 == 0))
			switch {
			case errors.Is(res.Err, context.DeadlineExceeded):
				t.Errorf("request %d hung: %v", i, res.Err)
			case res.Err != nil:
				mu.Lock()
				failures = append(failures, res.Err.Error())
				mu.Unlock()
			case res.Status != 200:
				t.Errorf("request %d: status %d", i, res.Status)
			}
		})
		// Only streams cut by the kill may fail, and only a handful.
		if len(failures) > 6 {
			t.Errorf("%d requests failed around the kill: %v", len(failures), failures)
		}
		// Two failed probes mark it: both fall within two intervals from now.
		time.Sleep(2 * interval)
		synctest.Wait()
		if st := e.workerStatus(base, dead.URL); st.Healthy || st.Circuit != "open" {
			t.Fatalf("dead worker, two probe intervals after the run: healthy=%v circuit=%s, want unhealthy and open", st.Healthy, st.Circuit)
		}
		fams := e.scrape(base)
		if fams.Sum("vllm_router_worker_health", map[string]string{"worker": dead.URL}) != 0 ||
			fams.Sum("vllm_router_cb_state", map[string]string{"worker": dead.URL}) != float64(BreakerOpen) {
			t.Error("metrics do not show the dead worker unhealthy with an open circuit")
		}
		deadBefore := processedBy(r, ws)[dead.URL]
		for i := range 30 {
			if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("after ", i), 4, false)); res.Status != 200 {
				t.Fatalf("after the kill: %d %s", res.Status, res.Body)
			}
		}
		if n := processedBy(r, ws)[dead.URL]; n != deadBefore {
			t.Errorf("dead worker got %v more attempts after being marked", n-deadBefore)
		}

		// Restarted, it passes two probes and its circuit's open period
		// ends; of the next three round-robin picks one is it, whose
		// success closes the circuit.
		dead.Restart()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if st := e.workerStatus(base, dead.URL); !st.Healthy {
			t.Fatalf("restarted worker after 61 s: healthy=%v, want healthy", st.Healthy)
		}
		for i := range 3 {
			if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("rejoin ", i), 2, false)); res.Status != 200 {
				t.Fatalf("rejoin %d: %d %s", i, res.Status, res.Body)
			}
		}
		if st := e.workerStatus(base, dead.URL); !st.Healthy || st.Circuit != "closed" || processedBy(r, ws)[dead.URL] != deadBefore+1 {
			t.Errorf("restarted worker: healthy=%v circuit=%s, %v more attempts; want healthy, closed, 1",
				st.Healthy, st.Circuit, processedBy(r, ws)[dead.URL]-deadBefore)
		}
	})
}

// 5. A saturated pool answers 429 queue_full or 503 pool_exhausted — never
// a hang or a generic 500. Stalled engines hold the in-flight slots and the
// queue full for as long as the test needs, so every extra request meets a
// full queue however the requests interleave.
func TestAcceptanceSaturatedPool(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(2)
	for _, w := range ws {
		w.SetFaults(sim.Faults{Stall: true})
	}
	cfg := testConfig("least_loaded", urls(ws)...)
	cfg.MaxConcurrentRequests, cfg.QueueSize = 4, 4
	r, base := e.router(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var held []<-chan routertest.Response
	for range 8 {
		held = append(held, e.Go(ctx, http.MethodPost, base+"/v1/completions", completion("x", 2, false)))
	}
	routertest.Eventually(t, 10*time.Second, func() error {
		if a, q := r.limiter.admitted.Load(), r.limiter.waiting.Load(); a != 4 || q != 4 {
			return fmt.Errorf("%d admitted, %d queued; want 4 and 4", a, q)
		}
		return nil
	})
	var mu sync.Mutex
	statuses := map[string]int{}
	fanOut(24, 24, func(int) {
		res := e.try(base+"/v1/completions", completion("x", 2, false))
		mu.Lock()
		statuses[fmt.Sprint(res.Status, " ", res.ErrorType())]++
		mu.Unlock()
	})
	if statuses["429 queue_full"] != 24 {
		t.Errorf("statuses %v with the queue full: want 24 × 429 queue_full", statuses)
	}
	cancel()
	for _, h := range held {
		<-h
	}
	routertest.WaitLoadsZero(t, r)
	for _, w := range ws {
		w.SetFaults(sim.Faults{})
	}
	if res := e.Post(base+"/v1/completions", completion("x", 2, false)); res.Status != 200 {
		t.Errorf("after the stall: %d %s", res.Status, res.Body)
	}

	// Workers refusing everything as overloaded: retries run out → pool_exhausted.
	for _, w := range ws {
		w.SetFaults(sim.Faults{ErrorRates: map[int]float64{503: 1}})
	}
	if res := e.Post(base+"/v1/completions", completion("x", 2, false)); res.Status != 503 || res.ErrorType() != ErrTypePoolExhausted {
		t.Errorf("overloaded workers → %d %s, want 503 pool_exhausted", res.Status, res.Body)
	}
}
