package router

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/target/sim"
)

// 5. A stalled prefill worker gives pd_connector_timeout (not a hang) while
// only it holds load; with a second prefill worker the requests succeed and
// the stalled one's open circuit gets no more traffic; with
// pd_fallback_local the decode worker prefills. prefill_timeout_secs runs on
// a bubble's fake clock, so it fires exactly when due and never on a healthy
// worker that a loaded machine answers late.
func TestPDStalledPrefill(t *testing.T) {
	t.Parallel()
	const stream = `{"model":"m","prompt":"stall me","max_tokens":4,"stream":true}`
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e := bubble(t)
			p, d := e.worker(), e.worker()
			p.Stall.Store(true)
			cfg := pdTestConfig("nixl", urlsOf(p), urlsOf(d))
			cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries = 0.5, 2
			cfg.Retry.InitialBackoffMs, cfg.Retry.MaxBackoffMs, cfg.Retry.JitterFactor = 100, 100, 0
			r, base := e.router(cfg)
			start := time.Now()
			got := e.goPost(context.Background(), base+"/v1/completions", stream, "X-Request-Id", "stall-1")
			synctest.Wait()
			wantLoads(t, r, map[string]int64{p.URL: 1, d.URL: 0})
			res := <-got
			// Two attempts of 0.5 s with one 100 ms backoff between them.
			if took := time.Since(start); took != 1100*time.Millisecond {
				t.Errorf("answered after %v on the fake clock, want 1.1s", took)
			}
			if res.Status != http.StatusGatewayTimeout {
				t.Fatalf("status %d err %v: %s; want 504", res.Status, res.Err, res.Body)
			}
			var body struct {
				Error struct {
					Type, Leg, RequestID string
					TimeoutSecs          float64 `json:"timeout_secs"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Type != ErrTypePDConnectorTimeout || body.Error.Leg != "prefill" || body.Error.TimeoutSecs != 0.5 {
				t.Errorf("error %s: want type pd_connector_timeout, leg prefill, timeout_secs 0.5", res.Body)
			}
			if !strings.Contains(res.Body, `"request_id":"stall-1"`) {
				t.Errorf("error %s does not name the request id", res.Body)
			}
			if np, nd := p.Requests.Load(), d.Requests.Load(); np != 2 || nd != 0 {
				t.Errorf("prefill got %d legs, decode %d; want 2 and 0", np, nd)
			}
		})
	})
	t.Run("retried on the other worker, circuit opens", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e := bubble(t)
			stalled, healthy, d := e.worker(), e.worker(), e.worker()
			stalled.Stall.Store(true)
			cfg := pdTestConfig("nixl", urlsOf(stalled, healthy), urlsOf(d))
			cfg.PrefillTimeoutSecs, cfg.CircuitBreaker.FailureThreshold = 0.5, 2
			r, base := e.router(cfg)
			for i := range 8 {
				if res := e.Post(base+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"one stalled %d","max_tokens":4}`, i)); res.Status != 200 {
					t.Fatalf("request %d: status %d: %s", i, res.Status, res.Body)
				}
			}
			if st := r.PrefillPool().Get(stalled.URL).Breaker().State(); st != BreakerOpen {
				t.Errorf("stalled prefill worker's circuit is %v, want open", st)
			}
			if n := testutil.ToFloat64(r.pd.m.prefillReqs.WithLabelValues(stalled.URL)); n != 2 {
				t.Errorf("stalled worker got %v prefill legs; want 2 (then its open circuit stops dispatch)", n)
			}
			if n := healthy.Requests.Load(); n != 8 {
				t.Errorf("healthy prefill worker got %d legs, want all 8", n)
			}
		})
	})
	t.Run("fallback to local prefill", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			e := bubble(t)
			p, d := e.worker(), e.worker()
			p.Stall.Store(true)
			cfg := pdTestConfig("nixl", urlsOf(p), urlsOf(d))
			cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries, cfg.PDFallbackLocal = 0.1, 1, true
			r, base := e.router(cfg)
			start := time.Now()
			res := e.Post(base+"/v1/completions", `{"model":"m","prompt":"fall back","max_tokens":6}`)
			if res.Status != 200 || !strings.Contains(res.Body, fmt.Sprintf(`"served_by":%q`, d.URL)) {
				t.Fatalf("status %d: %s; want the decode worker's answer", res.Status, res.Body)
			}
			if took := time.Since(start); took != 100*time.Millisecond {
				t.Errorf("answered after %v on the fake clock, want prefill_timeout_secs (100ms)", took)
			}
			if n := testutil.ToFloat64(r.pd.m.localPrefill.WithLabelValues(localPrefillFailed)); n != 1 {
				t.Errorf("pd_local_prefill_total{reason=prefill_failed} = %v, want 1", n)
			}
		})
	})
}

// The same fallback on simulated engines: a decode engine that prefills
// locally after the prefill engine stalled answers exactly as a collocated
// engine. The stalled engine never answers, so the outcome does not depend
// on how long prefill_timeout_secs takes on the wall clock.
func TestPDAcceptanceStalledPrefillFallsBack(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 1, fast), e.pdSims(sim.RoleDecode, 1, fast)
	coll := e.pdSims(sim.RoleCollocated, 1, fast)
	P[0].SetFaults(sim.Faults{Stall: true})
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries, cfg.PDFallbackLocal = 0.1, 1, true
	r, base := e.router(cfg)
	body := completion("fall back", 6, false)
	want := e.Post(coll[0].URL+"/v1/completions", body)
	got := e.Post(base+"/v1/completions", body)
	if got.Status != 200 || textOf(t, got.Body) != textOf(t, want.Body) {
		t.Fatalf("status %d: %s; want the collocated text %s", got.Status, got.Body, want.Body)
	}
	if n := testutil.ToFloat64(r.pd.m.localPrefill.WithLabelValues(localPrefillFailed)); n != 1 {
		t.Errorf("pd_local_prefill_total{reason=prefill_failed} = %v, want 1", n)
	}
}

// An open prefill circuit gets no traffic, yet is not left "fake-dead"
// while pd_fallback_local serves every request from decode: each request
// still asks the prefill pool, so after the open period the worker is tried
// again (half-open) and its circuit closes once it answers. The engines use
// real sockets, so the open period passes on an injected clock.
func TestPDOpenPrefillCircuitRecovers(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 1, fast), e.pdSims(sim.RoleDecode, 1, fast)
	P[0].SetFaults(sim.Faults{ErrorRates: map[int]float64{500: 1}})
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := pdSimConfig(P, D, "round_robin", "round_robin")
	cfg.PDFallbackLocal, cfg.CircuitBreaker.FailureThreshold, cfg.CircuitBreaker.SuccessThreshold = true, 2, 2
	r, base := e.router(cfg, WithClock(clock))
	legs := func() float64 { return testutil.ToFloat64(r.pd.m.prefillReqs.WithLabelValues(P[0].URL)) }
	for i := range 5 {
		if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("circuit ", i), 4, false)); res.Status != 200 || res.Err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, res.Status, res.Err, res.Body)
		}
	}
	if n, st := legs(), r.PrefillPool().Get(P[0].URL).Breaker().State(); n != 2 || st != BreakerOpen {
		t.Fatalf("failing prefill worker got %v legs, circuit %v; want 2 then open (no dispatch while open)", n, st)
	}
	P[0].SetFaults(sim.Faults{})
	offset.Store(int64(61 * time.Second)) // past circuit_breaker.timeout_duration_secs (60)
	for i := range 2 {
		if res := e.Post(base+"/v1/completions", completion(fmt.Sprint("recovered ", i), 4, false)); res.Status != 200 || res.Err != nil {
			t.Fatalf("request %d: status %d err %v: %s", i, res.Status, res.Err, res.Body)
		}
	}
	if n, st := legs(), r.PrefillPool().Get(P[0].URL).Breaker().State(); n != 4 || st != BreakerClosed {
		t.Fatalf("after the open period: %v legs, circuit %v; want 4 and closed", n, st)
	}
}
