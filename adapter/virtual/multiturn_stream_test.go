package virtual_test

import (
	"context"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

// multiTurn is a synthetic-history multi_turn workload of n sessions of
// four turns, 40 sessions a second.
func multiTurn(n int) driver.Config {
	return driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.ChatEndpoint, Model: "sim-model", Seed: 8, WarmupRequests: 2,
		SessionHeader: "x-session-id",
		Workload: driver.Workload{Kind: "multi_turn", History: "synthetic", Sessions: n, Turns: 4, InputLen: 48, OutputLen: 8,
			RangeRatio: 0.5, SystemPromptLen: 24, ThinkTimeMs: 200},
		Arrival: driver.Arrival{Kind: "poisson", RequestRate: 40}}
}

// roundRobin is a round_robin deployment of n engines (no router state
// that grows with the run).
func roundRobin(t *testing.T, n int) *virtual.Deployment {
	t.Helper()
	ws := workers(t, n, sim.RoleCollocated)
	cfg := routerconfig.Default()
	cfg.Policy = "round_robin"
	for _, w := range ws {
		cfg.WorkerURLs = append(cfg.WorkerURLs, w.URL)
	}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLazyMultiTurnMatchesGenerated: a streamed run of multi_turn sessions,
// whose turns are produced as their sessions start, sends what Generate
// builds (equal stream and sent hashes) and summarises as the kept run
// does: with a concurrency cap, and when max_seconds stops it with
// sessions unsent, in flight and cut short.
func TestLazyMultiTurnMatchesGenerated(t *testing.T) {
	for _, c := range []struct {
		maxSeconds float64
		limit      int
	}{{0, 0}, {0, 6}, {1.2, 0}} {
		dc := multiTurn(60)
		dc.Workload.MaxSeconds, dc.Arrival.MaxConcurrency = c.maxSeconds, c.limit
		kept, err := driver.Simulate(context.Background(), dc, roundRobin(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		lazy, err := driver.SimulateWith(context.Background(), dc, roundRobin(t, 2), driver.SimOptions{Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := driver.Generate(dc)
		if err != nil {
			t.Fatal(err)
		}
		a, b := kept.Summary, lazy.Summary
		if b.StreamHash != st.Hash() || a.StreamHash != st.Hash() || a.SentHash != b.SentHash {
			t.Fatalf("%+v: stream hash lazy %s, kept %s, generated %s; sent hash kept %s, lazy %s", c,
				b.StreamHash, a.StreamHash, st.Hash(), a.SentHash, b.SentHash)
		}
		if a.Completed != b.Completed || a.NotSent != b.NotSent || a.Incomplete != b.Incomplete || a.Failed != b.Failed ||
			a.P99TTFTMs != b.P99TTFTMs || a.P50TPOTMs != b.P50TPOTMs || a.MaxConcurrentRequests != b.MaxConcurrentRequests ||
			a.Duration != b.Duration || a.TotalInputTokens != b.TotalInputTokens || a.NumPrompts != b.NumPrompts {
			t.Fatalf("%+v: lazy streamed summary differs:\nkept %+v\nlazy %+v", c, a, b)
		}
		if a.Completed == 0 || c.maxSeconds > 0 && (a.NotSent == 0 || a.Completed == a.NumPrompts) {
			t.Fatalf("%+v: %d of %d completed, %d not sent: max_seconds should stop the run midway", c, a.Completed, a.NumPrompts, a.NotSent)
		}
	}
}

// TestLazyMultiTurnMemory: a streamed multi_turn run holds its live
// sessions only, so its live heap late in the run does not grow with the
// number of sessions (four times the sessions, about the same heap), while
// a run that keeps its stream and records whole grows by more than a
// kilobyte per request (the bodies with their history, the records).
func TestLazyMultiTurnMemory(t *testing.T) {
	heap := func(sessions int, stream bool) uint64 {
		dc := multiTurn(sessions)
		probe := &heapProbe{Deployment: roundRobin(t, 2), at: sessions * 4 * 9 / 10}
		// A streamed summary keeps exact values up to a bound, then a
		// histogram: bound them low, to see what the stream holds.
		res, err := driver.SimulateWith(context.Background(), dc, probe, driver.SimOptions{Stream: stream, ExactValues: 64})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Completed != sessions*4 {
			t.Fatalf("%d of %d requests completed", res.Summary.Completed, sessions*4)
		}
		return probe.heap
	}
	const small, large = 300, 1200
	extra := float64((large - small) * 4)
	grow := func(stream bool) float64 {
		return (float64(heap(large, stream)) - float64(heap(small, stream))) / extra
	}
	lazy, kept := grow(true), grow(false)
	t.Logf("live heap per extra request: streamed %.0f B, kept %.0f B", lazy, kept)
	if lazy > 128 || kept < 1024 {
		t.Errorf("live heap per extra request: streamed %.0f B (want < 128 B), kept %.0f B (want > 1 KiB)", lazy, kept)
	}
}
