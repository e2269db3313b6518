package virtual_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
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
		t.Run(fmt.Sprintf("max_seconds=%v/limit=%d", c.maxSeconds, c.limit), func(t *testing.T) {
			dc := multiTurn(60)
			dc.Workload.MaxSeconds, dc.Arrival.MaxConcurrency = c.maxSeconds, c.limit
			a := keptMatchesLazy(t, dc, func() *virtual.Deployment { return deployed(t, 2, "round_robin") })
			if a.Completed == 0 || c.maxSeconds > 0 && (a.NotSent == 0 || a.Completed == a.NumPrompts) {
				t.Fatalf("%d of %d completed, %d not sent: max_seconds should stop the run midway", a.Completed, a.NumPrompts, a.NotSent)
			}
		})
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
		var heap uint64
		probe := liveHeapAt(deployed(t, 2, "round_robin"), sessions*4*9/10, &heap)
		// A streamed summary keeps exact values up to a bound, then a
		// histogram: bound them low, to see what the stream holds.
		res, err := driver.SimulateWith(context.Background(), dc, probe, driver.SimOptions{Stream: stream, ExactValues: 64})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Completed != sessions*4 {
			t.Fatalf("%d of %d requests completed", res.Summary.Completed, sessions*4)
		}
		return heap
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
