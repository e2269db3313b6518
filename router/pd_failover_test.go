package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// 2. Killing one prefill worker, then one decode worker, mid-run: no
// request hangs; once the router has seen the death, later requests use the
// survivor. Engines (KV side channel included), router and client share a
// bubble's in-memory network, so the health checks run on the fake clock:
// three probes 0.5 s apart mark the dead worker, and a slow probe on a busy
// machine can never mark the survivor.
func TestPDAcceptanceKillWorkerMidRun(t *testing.T) {
	t.Parallel()
	fast, _ := sim.LookupProfile("fast")
	for _, role := range []string{"prefill", "decode"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { pdKillWorkerMidRun(t, role, fast) })
		})
	}
}

func pdKillWorkerMidRun(t *testing.T, role string, fast sim.Profile) {
	e := bubble(t)
	P, D := e.pdSims(sim.RolePrefill, 2, fast), e.pdSims(sim.RoleDecode, 2, fast)
	victim, survivor, pool := P[0], P[1], "vllm_router_pd_prefill_requests_total"
	if role == "decode" {
		victim, survivor, pool = D[0], D[1], "vllm_router_pd_decode_requests_total"
	}
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	const interval = 500 * time.Millisecond
	cfg.HealthCheck.IntervalSecs, cfg.HealthCheck.TimeoutSecs = interval.Seconds(), interval.Seconds()
	if cfg.HealthCheck.FailureThreshold != 3 {
		t.Fatalf("failure threshold %d: the test waits for 3 probes", cfg.HealthCheck.FailureThreshold)
	}
	r, base := e.router(cfg)

	var done, failed atomic.Int64
	fanOut(40, 4, func(i int) {
		res := e.try(base+"/v1/completions", completion(fmt.Sprint("kill run ", i), 32, i%2 == 0))
		if done.Add(1) == 10 {
			// The 10th to finish kills the victim while the other
			// three clients have requests in flight.
			victim.Stop()
		}
		if errors.Is(res.Err, context.DeadlineExceeded) {
			t.Errorf("request %d hung: %v", i, res.Err)
		}
		if res.Status != 200 || res.Err != nil {
			failed.Add(1)
			t.Logf("request %d: status %d err %v %s", i, res.Status, res.Err, res.Body)
		}
	})
	t.Logf("%s worker killed after 10 of 40 requests; %d failed", role, failed.Load())
	// A dead prefill worker is retried around (and a pull from it falls
	// back to local prefill): nothing fails. A dead decode worker can
	// only cut the streams it was serving (the 3 others in flight when it died,
	// plus one spare for a request whose every decode attempt raced the kill).
	if role == "prefill" && failed.Load() != 0 {
		t.Errorf("%d requests failed after a prefill worker died; want 0 (retried on the other)", failed.Load())
	}
	if failed.Load() > 4 {
		t.Errorf("%d requests failed; at most the streams in flight on the killed worker may", failed.Load())
	}

	// Three failed probes mark it: all fall within three intervals from now.
	time.Sleep(3 * interval)
	synctest.Wait()
	for _, w := range r.Workers().Workers {
		if healthy := w.URL != victim.URL; w.Healthy != healthy {
			t.Fatalf("three probe intervals after the run the router sees %s healthy=%v, want %v", w.URL, w.Healthy, healthy)
		}
	}
	before := e.scrape(base)
	for i := range 10 {
		if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("after kill ", i), 4, true)); res.Status != 200 || res.Err != nil {
			t.Errorf("request after the kill: status %d, err %v: %s", res.Status, res.Err, res.Body)
		}
	}
	after := e.scrape(base)
	delta := func(w *simtest.Worker) float64 {
		m := map[string]string{"worker": w.URL}
		return after.Sum(pool, m) - before.Sum(pool, m)
	}
	if delta(victim) != 0 || delta(survivor) != 10 {
		t.Errorf("after the kill: %v legs to the dead %s worker, %v to the survivor; want 0 and 10", delta(victim), role, delta(survivor))
	}
}

// A decode worker failing before its first byte is retried on another; an
// empty pool answers 503 naming the pool.
func TestPDDecodeRetryAndEmptyPools(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 1, fast), e.pdSims(sim.RoleDecode, 2, fast)
	D[0].SetFaults(sim.Faults{ErrorRates: map[int]float64{503: 1}})
	r, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	for i := range 6 {
		if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("retry decode ", i), 4, true)); res.Status != 200 || res.Err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, res.Status, res.Err, res.Body)
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
		res := e.Post(base+"/v1/completions", completion("nobody home", 4, false))
		if res.Status != 503 || res.ErrorType() != ErrTypeNoAvailableWorkers || !strings.Contains(res.Body, `pool \"`+tc.name+`\"`) {
			t.Errorf("empty %s pool: status %d %s; want 503 naming the pool", tc.name, res.Status, res.Body)
		}
		for _, u := range tc.urls {
			tc.pool.Add(u)
		}
		// Re-added workers serve once a probe found them up.
		routertest.Eventually(t, hangBound, func() error {
			for _, w := range tc.pool.Workers() {
				if !w.Healthy() {
					return fmt.Errorf("%s not healthy yet", w.URL())
				}
			}
			return nil
		})
	}
}
