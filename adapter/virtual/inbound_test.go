package virtual_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// runTrace runs trace (JSON lines) against one engine on the linear "fast"
// profile, no prefix cache, with the given HTTP path and client cap.
func runTrace(t *testing.T, trace string, limit int, overhead, inbound time.Duration) []metrics.RequestRecord {
	t.Helper()
	return runTraceLag(t, trace, limit, overhead, inbound, 0, 0)
}

// runTraceLag is runTrace with the engine's steps modelled lag late
// (engine_lag_ms), and wake late those an idle engine plans on an arrival
// (engine_wake_ms).
func runTraceLag(t *testing.T, trace string, limit int, overhead, inbound, lag, wake time.Duration) []metrics.RequestRecord {
	t.Helper()
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(trace), 0o600); err != nil {
		t.Fatal(err)
	}
	off := false
	d, err := virtual.New([]virtual.Worker{{URL: "http://virtual-only", Options: sim.Options{Profile: prof,
		Engine: engine.Config{Model: "sim-model", EnablePrefixCaching: &off}}}}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Fleet().SetLag(lag, wake); err != nil {
		t.Fatal(err)
	}
	dc := driver.Config{BaseURL: "http://virtual:1", Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 1,
		WarmupRequests: -1, ReadyCheckTimeout: -1, Workload: driver.Workload{Kind: "trace", Path: path},
		Arrival: driver.Arrival{MaxConcurrency: limit}, HTTPOverhead: overhead, HTTPInbound: inbound}
	res, err := driver.Simulate(context.Background(), dc, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Requests {
		if !r.Success {
			t.Fatalf("request %d failed: %s", r.Index, r.Error)
		}
	}
	return res.Requests
}

// twoRequests runs a trace of two requests (A at 0 ms: 100 prompt tokens,
// 10 output tokens; B at 0.5 ms: 50 and 2) against one engine on the
// linear "fast" profile, no prefix cache, with the given HTTP path.
func twoRequests(t *testing.T, overhead, inbound time.Duration) ([]metrics.RequestRecord, sim.Profile) {
	t.Helper()
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	recs := runTrace(t, `{"timestamp": 0, "input_length": 100, "output_length": 10}
{"timestamp": 0.5, "input_length": 50, "output_length": 2}
`, 0, overhead, inbound)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	return recs, prof
}

// TestHTTPInboundDelaysArrivalExactly: with a 0.5 ms HTTP path of which
// 0.3 ms lie before the engine, A reaches the engine at 0.3 ms and its
// prefill step runs from there; B (sent at 0.5 ms) reaches it at 0.8 ms,
// during A's prefill, and joins the next step (its prefill and A's first
// decode). Every TTFT is the steps' exact sum from the send plus the path.
func TestHTTPInboundDelaysArrivalExactly(t *testing.T) {
	const overhead, inbound = 500 * time.Microsecond, 300 * time.Microsecond
	recs, prof := twoRequests(t, overhead, inbound)
	a, b := recs[0], recs[1]
	pa, pb := *a.PromptTokens, *b.PromptTokens
	s1 := prof.StepTime(pa, 0, 0)    // A's prefill: A's first token
	s2 := prof.StepTime(pb, 1, pa+1) // B's prefill with A's first decode: B's first token
	sendB := 500 * time.Microsecond
	if s1 <= sendB {
		t.Fatalf("A's prefill step %v must outlast B's send offset %v for B to arrive during it", s1, sendB)
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	if want := ms(inbound + s1 + overhead - inbound); !near(a.TTFTMs, want) {
		t.Errorf("A: TTFT %.6f ms, want %.6f (inbound + prefill step + outbound)", a.TTFTMs, want)
	}
	if want := ms(inbound + s1 + s2 - sendB + overhead - inbound); !near(b.TTFTMs, want) {
		t.Errorf("B: TTFT %.6f ms, want %.6f (A's arrival + A's prefill + the shared step − B's send + outbound)", b.TTFTMs, want)
	}
	if b.SendMs != 0.5 || a.SendMs != 0 {
		t.Errorf("send offsets %v, %v: want 0 and 0.5 ms (the client's send, not the engine's arrival)", a.SendMs, b.SendMs)
	}
}

// TestClientWaitsForDeliveryAndMissesAStep: with the client capped at two
// requests in flight, B is sent when C's answer reaches the client. C and
// A prefill together in step 1; C finishes with its one token there.
// Without an HTTP path B is sent and arrives at that instant and joins
// step 2 (its prefill with A's decode). With a 0.3 ms path (0.1 ms in,
// 0.2 ms back) C's answer reaches the client 0.2 ms after step 1, B
// reaches the engine 0.1 ms after that, step 2 (A's decode alone) has
// begun without it, and B's first token comes a whole step later: its TTFT grows by that
// step, not by the path.
func TestClientWaitsForDeliveryAndMissesAStep(t *testing.T) {
	const trace = `{"timestamp": 0, "input_length": 100, "output_length": 10}
{"timestamp": 0, "input_length": 20, "output_length": 1}
{"timestamp": 0, "input_length": 50, "output_length": 2}
`
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for _, c := range []struct {
		name              string
		overhead, inbound time.Duration
	}{{"no path", 0, 0}, {"0.3 ms path", 300 * time.Microsecond, 100 * time.Microsecond}} {
		recs := runTrace(t, trace, 2, c.overhead, c.inbound)
		a, cc, b := recs[0], recs[1], recs[2]
		if a.OutputTokens != 10 || cc.OutputTokens != 1 || b.OutputTokens != 2 {
			t.Fatalf("%s: output tokens %d, %d, %d: want 10, 1, 2", c.name, a.OutputTokens, cc.OutputTokens, b.OutputTokens)
		}
		pa, pc, pb := *a.PromptTokens, *cc.PromptTokens, *b.PromptTokens
		s1 := prof.StepTime(pa+pc, 0, 0)     // A and C prefill: C's only token
		decodeA := prof.StepTime(0, 1, pa+1) // A's decode alone
		joined := prof.StepTime(pb, 1, pa+1) // B's prefill with A's decode
		// A and C reach the engine the inbound part after 0, C's answer
		// the client the rest of the path after step 1.
		wantSend, wantTTFT := c.overhead+s1, joined
		if c.overhead > 0 {
			wantTTFT = decodeA + joined
		}
		if !near(b.SendMs, ms(wantSend)) || !near(b.TTFTMs, ms(wantTTFT)) {
			t.Errorf("%s: B sent at %.6f ms with TTFT %.6f ms, want %.6f and %.6f", c.name, b.SendMs, b.TTFTMs, ms(wantSend), ms(wantTTFT))
		}
		if want := ms(s1 + c.overhead); !near(cc.TTFTMs, want) {
			t.Errorf("%s: C's TTFT %.6f ms, want %.6f (its prefill step and the path)", c.name, cc.TTFTMs, want)
		}
	}
}

// TestHTTPInboundIsATimeShift: a fixed inbound delay shifts every arrival
// at the engines alike, and the client's next sends hang on nothing the
// engines do, so a run's records depend on the path's total only: all of
// it before the engine or all after give byte-identical records, and
// both equal to the total without the split. (Only absolute times — the
// policy's eviction ticks, max_seconds — could tell them apart.) The same
// split twice gives the same bytes.
func TestHTTPInboundIsATimeShift(t *testing.T) {
	run := func(inbound time.Duration) []byte {
		return cacheAwareRecords(t, func(_ *virtual.Deployment, dc *driver.Config) error {
			dc.HTTPOverhead, dc.HTTPInbound = 1500*time.Microsecond, inbound
			return nil
		})
	}
	none, part, all, again := run(0), run(900*time.Microsecond), run(1500*time.Microsecond), run(900*time.Microsecond)
	if !bytes.Equal(part, again) {
		t.Fatal("the same split twice gave different records")
	}
	if !bytes.Equal(none, part) || !bytes.Equal(none, all) {
		t.Errorf("inbound 0, 0.9 and 1.5 ms of a 1.5 ms path gave different records")
	}
}

// TestHTTPInboundAboveOverheadIsRefused: the driver refuses a split whose
// inbound part exceeds the total.
func TestHTTPInboundAboveOverheadIsRefused(t *testing.T) {
	d, err := virtual.New(workers(t, 1, sim.RoleCollocated), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	dc := sharedPrefix(1)
	dc.HTTPOverhead, dc.HTTPInbound = time.Millisecond, 2*time.Millisecond
	if _, err := driver.Simulate(context.Background(), dc, d); err == nil {
		t.Error("inbound 2 ms of a 1 ms path was accepted")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
