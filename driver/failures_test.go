package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// indexOf reads the request index from the default session header.
func indexOf(t *testing.T, r *http.Request) int {
	v := r.Header.Get("X-Session-ID")
	i, err := strconv.Atoi(v[strings.LastIndexByte(v, '-')+1:])
	if err != nil {
		t.Errorf("session header %q does not end in an index", v)
	}
	return i
}

// TestGoodputAndFailureBreakdown runs 20 requests one at a time against a
// server whose answer depends on the request index i (mod 10):
//
//	0: 503 with an OpenAI error body of type RouterPoolExhausted
//	1: 429 with vllm's older top-level error shape, type RateLimited
//	2: 500 with a plain-text body (no type: http_error)
//	3: connection closed before any response (transport_error)
//	4: 200 whose stream carries an error event of type EngineDead
//	5–7: success, TTFT 50 ms, 4 tokens 10 ms apart (TPOT 10 ms)
//	8–9: success, TTFT 500 ms, same decode
//
// With SLOs ttft ≤ 100 ms and tpot ≤ 20 ms, 6 of the 10 successes are good.
// Times come from the scripted clock, so the duration is exactly the sum of
// the scripted streams: 6 × 80 ms + 4 × 530 ms + 2 × 60 ms (the
// error-event streams: a 50 ms chunk then the error after 10 ms) = 2.72 s.
func TestGoodputAndFailureBreakdown(t *testing.T) {
	clock := newScriptClock()
	stream := func(ttftMs int) []event {
		ev := []event{{time.Duration(ttftMs) * ms, `{"choices":[{"index":0,"text":"a"}]}`}}
		for range 3 {
			ev = append(ev, event{10 * ms, `{"choices":[{"index":0,"text":" b"}]}`})
		}
		return append(ev, event{0, `{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}}`}, event{0, "[DONE]"})
	}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch indexOf(t, r) % 10 {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"no worker can take the request","type":"RouterPoolExhausted","param":null,"code":503}}`)
		case 1:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"object":"error","message":"slow down","type":"RateLimited","param":null,"code":429}`)
		case 2:
			http.Error(w, "internal server error", http.StatusInternalServerError)
		case 3:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case 4:
			playScript(t, w, clock, "", []event{
				{50 * ms, `{"choices":[{"index":0,"text":"a"}]}`},
				{10 * ms, `{"error":{"message":"engine died","type":"EngineDead","param":null,"code":500}}`},
			})
		case 5, 6, 7:
			playScript(t, w, clock, "", stream(50))
		default:
			playScript(t, w, clock, "", stream(500))
		}
	})
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 20, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Workload: driver.Workload{Kind: "random", InputLen: 8, OutputLen: 4},
		Arrival:  driver.Arrival{Kind: "closed_loop", MaxConcurrency: 1},
		Goodput:  driver.SLO{TTFTMs: 100, TPOTMs: 20}}
	res, err := driver.Run(context.Background(), cfg, driver.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Completed != 10 || s.Failed != 10 {
		t.Fatalf("completed %d failed %d, want 10 and 10", s.Completed, s.Failed)
	}
	wantStatus := map[string]int{"503": 2, "429": 2, "500": 2, "no_response": 2, "200": 2}
	wantType := map[string]int{"RouterPoolExhausted": 2, "RateLimited": 2, "http_error": 2, "transport_error": 2, "EngineDead": 2}
	if fmt.Sprint(s.ErrorsByStatus) != fmt.Sprint(wantStatus) || fmt.Sprint(s.ErrorsByType) != fmt.Sprint(wantType) {
		t.Errorf("breakdown by status %v, by type %v; want %v and %v", s.ErrorsByStatus, s.ErrorsByType, wantStatus, wantType)
	}
	d := (2720 * time.Millisecond).Seconds()
	if s.Duration != d {
		t.Fatalf("duration %v s, want %v", s.Duration, d)
	}
	if s.RequestGoodput == nil || *s.RequestGoodput != 6/d {
		t.Errorf("goodput %v, want 6/%v", s.RequestGoodput, d)
	}
	if s.RequestThroughput != 10/d || s.TotalOutputTokens != 40 || s.TotalInputTokens != 80 {
		t.Errorf("throughput %v, tokens in %d out %d", s.RequestThroughput, s.TotalInputTokens, s.TotalOutputTokens)
	}
	for _, r := range res.Requests {
		if !r.Success && (r.Error == "" || r.ErrorType == "") {
			t.Errorf("failed request %d lacks its error: %+v", r.Index, r)
		}
	}
	if r := res.Requests[0]; r.Status != 503 || !strings.Contains(r.Error, "no worker") {
		t.Errorf("request 0: %+v", r)
	}
}
