package router

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/target/sim"
)

// 5. A stalled prefill worker gives pd_connector_timeout (not a hang) while
// only it holds load; with a second prefill worker the requests succeed and
// the stalled one's open circuit gets no more traffic; with
// pd_fallback_local the decode worker prefills.
func TestPDAcceptanceStalledPrefill(t *testing.T) {
	fast, _ := sim.LookupProfile("fast")
	t.Run("timeout", func(t *testing.T) {
		t.Parallel() // each subtest waits out its own stalls
		P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
		P[0].SetFaults(sim.Faults{Stall: true})
		cfg := pdSimConfig(P, D, "round_robin", "round_robin")
		// 2 attempts of 0.5 s: a window wide enough for the poll below to see
		// the stalled load even when the test goroutine is scheduled late.
		cfg.PrefillTimeoutSecs, cfg.Retry.MaxRetries = 0.5, 2
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
		if e.Error.Type != ErrTypePDConnectorTimeout || e.Error.Leg != "prefill" || e.Error.TimeoutSecs != 0.5 {
			t.Errorf("error %s: want type pd_connector_timeout, leg prefill, timeout_secs 0.5", got.body)
		}
		if !strings.Contains(got.body, `"request_id":"stall-1"`) {
			t.Errorf("error %s does not name the request id", got.body)
		}
		// Two attempts of 0.5 s plus a few ms of backoff: far from a hang.
		if got.took > 5*time.Second {
			t.Errorf("took %v", got.took)
		}
	})
	t.Run("retried on the other worker, circuit opens", func(t *testing.T) {
		t.Parallel() // each subtest waits out its own stalls
		P, D := pdSims(t, sim.RolePrefill, 2, fast), pdSims(t, sim.RoleDecode, 1, fast)
		P[0].SetFaults(sim.Faults{Stall: true})
		cfg := pdSimConfig(P, D, "round_robin", "round_robin")
		// The timeout also bounds the healthy worker's legs, so it is long
		// enough that a loaded machine never times those out.
		cfg.PrefillTimeoutSecs, cfg.CircuitBreaker.FailureThreshold = 0.5, 2
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
		t.Parallel() // each subtest waits out its own stalls
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
