package driver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// TestMaxConcurrencyCap: with max_concurrency 3 the server never sees more
// than 3 requests in flight, and does see 3 (each handler waits until 3 are
// in flight or the last requests have arrived).
func TestMaxConcurrencyCap(t *testing.T) {
	const n, limit = 30, 3
	var mu sync.Mutex
	changed := make(chan struct{}) // closed and replaced when a request arrives
	inflight, arrived, peak := 0, 0, 0
	gaveUp := false // set once a wait timed out: later requests do not wait
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		arrived++
		peak = max(peak, inflight)
		close(changed)
		changed = make(chan struct{})
		// A driver that never fills the cap fails here within 10 s
		// instead of hanging the suite.
		deadline := time.After(10 * time.Second)
		for !gaveUp && inflight < limit && arrived <= n-limit {
			ch := changed
			mu.Unlock()
			select {
			case <-ch:
				mu.Lock()
			case <-deadline:
				mu.Lock()
				t.Errorf("a request waited 10 s with %d of %d in flight", inflight, limit)
				gaveUp = true
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		// Leave the in-flight count before the response completes, so the
		// client cannot send the next request before it is counted out.
		mu.Lock()
		inflight--
		mu.Unlock()
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\ndata: [DONE]\n\n")
	})
	for _, arr := range []driver.Arrival{{MaxConcurrency: limit}, {Kind: "closed_loop", MaxConcurrency: limit}} {
		mu.Lock()
		arrived, peak, gaveUp = 0, 0, false
		mu.Unlock()
		cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: n, WarmupRequests: -1, ReadyCheckTimeout: -1, Arrival: arr,
			Workload: driver.Workload{Kind: "random", InputLen: 4, OutputLen: 1}}
		res, err := driver.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if peak != limit {
			t.Errorf("%+v: server saw at most %d in flight, want exactly %d", arr, peak, limit)
		}
		mu.Unlock()
		if res.Summary.Completed != n || res.Summary.MaxConcurrency == nil || *res.Summary.MaxConcurrency != limit {
			t.Errorf("summary %+v", res.Summary)
		}
		for _, r := range res.Requests {
			if r.DueMs < r.IntendedMs || r.ScheduleDelayMs < 0 {
				t.Errorf("request %d: intended %.3f due %.3f delay %.3f", r.Index, r.IntendedMs, r.DueMs, r.ScheduleDelayMs)
			}
		}
	}
}

// TestCancelReturnsPartialResult: cancelling the context (Ctrl-C) stops the
// run, in-flight requests end as incomplete, unsent ones as not_sent, none
// counts as failed, and Run returns the partial result with the context's
// error.
func TestCancelReturnsPartialResult(t *testing.T) {
	started := make(chan struct{}, 100)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The goroutine ends with the test: at the first request, or at the
	// deferred cancel if none ever arrives.
	go func() {
		select {
		case <-started:
		case <-ctx.Done():
		}
		cancel()
	}()
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 50, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Arrival:  driver.Arrival{RequestRate: 20},
		Workload: driver.Workload{Kind: "random", InputLen: 4, OutputLen: 1}}
	res, err := driver.Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run returned %v, %v; want a partial result and context.Canceled", res, err)
	}
	sent := 0
	for _, r := range res.Requests {
		want := driver.ErrNotSent
		if r.Sent {
			want = driver.ErrIncomplete
			sent++
		}
		if r.Success || r.ErrorType != want {
			t.Fatalf("request %d: %+v, want %s", r.Index, r, want)
		}
	}
	s := res.Summary
	if sent == 0 || sent == 50 || s.Failed != 0 || s.Incomplete != sent || s.NotSent != 50-sent {
		t.Errorf("%d of 50 sent; summary failed %d, incomplete %d, not_sent %d; want 0, %d, %d", sent, s.Failed, s.Incomplete, s.NotSent, sent, 50-sent)
	}
}

// TestCancelledBeforeStartSendsNothing: with the context already ended, the
// scheduler dispatches nothing (even requests due at once): the server sees
// no request and every record is not_sent, so a cancelled run never
// reports requests as sent that never left, nor as failed.
func TestCancelledBeforeStartSendsNothing(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen++
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 10, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Workload: driver.Workload{Kind: "random", InputLen: 4, OutputLen: 1}}
	res, err := driver.Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run returned %v, %v; want a result and context.Canceled", res, err)
	}
	for _, r := range res.Requests {
		if r.Sent || r.ErrorType != driver.ErrNotSent {
			t.Errorf("request %d: sent %v, error type %q; want unsent and not_sent", r.Index, r.Sent, r.ErrorType)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != 0 || res.Summary.Failed != 0 || res.Summary.NotSent != 10 {
		t.Errorf("server saw %d requests, %d failed, %d not sent; want 0, 0 and 10", seen, res.Summary.Failed, res.Summary.NotSent)
	}
}
