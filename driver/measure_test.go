package driver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

const ms = time.Millisecond

// TestChatMetricDefinitions scripts a vLLM-shaped chat stream: a role-only
// first chunk at 100 ms, content at 130, 150 and 190 ms, an empty finish
// chunk at 200 ms, the usage chunk (choices: []) at 205 ms and [DONE] at
// 210 ms, with an SSE comment in between. By vllm bench serve's
// definitions: TTFT = 100 ms (the role chunk counts), ITL = [30 20 40 10]
// (the finish chunk counts, the usage chunk does not), E2EL = 200 ms, and
// TPOT = (200 − 100)/(3 − 1) = 50 ms from usage.completion_tokens = 3.
// (39.699999999999996 is numpy.percentile's p99 of [30 20 40 10].)
func TestChatMetricDefinitions(t *testing.T) {
	clock := newScriptClock()
	var got struct {
		header http.Header
		body   map[string]any
	}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got.header = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		playScript(t, w, clock, "", []event{
			{100 * ms, `{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}],"usage":null}`},
			{30 * ms, `{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}],"usage":null}`},
			{20 * ms, `{"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}],"usage":null}`},
			{40 * ms, `{"choices":[{"index":0,"delta":{"content":" again"},"finish_reason":null}],"usage":null}`},
			{10 * ms, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`},
			{5 * ms, `{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43,"prompt_tokens_details":{"cached_tokens":32}}}`},
			{5 * ms, `[DONE]`},
		})
	})
	cfg := driver.Config{
		BaseURL: url, Endpoint: driver.ChatEndpoint, Model: "m", NumPrompts: 1, TrialID: "t1", RunID: "run-a",
		Workload: driver.Workload{Kind: "random", InputLen: 40, OutputLen: 3}, WarmupRequests: -1, ReadyCheckTimeout: -1, KeepText: true,
	}
	res, err := driver.Run(context.Background(), cfg, driver.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Requests[0]
	if !r.Success || r.TTFTMs != 100 || !slices.Equal(r.ITLMs, []float64{30, 20, 40, 10}) || r.E2ELMs != 200 || r.TPOTMs != 50 || r.OutputTokens != 3 {
		t.Fatalf("record %+v; want TTFT 100, ITL [30 20 40 10], E2EL 200, TPOT 50, 3 output tokens", r)
	}
	if r.CachedTokens == nil || *r.CachedTokens != 32 || *r.PromptTokens != 40 || r.InputTokens != 40 || r.GeneratedText != "Hello world again" {
		t.Errorf("usage/text not recorded: %+v", r)
	}
	s := res.Summary
	if s.MeanTTFTMs != 100 || s.P99ITLMs != 39.699999999999996 || s.MedianITLMs != 25 || s.MeanE2ELMs != 200 || s.P90TPOTMs != 50 || s.Completed != 1 || s.TotalOutputTokens != 3 {
		t.Errorf("summary %+v", s)
	}
	// The run ends when [DONE] arrives: 210 ms after it started.
	if s.Duration != 0.21 || s.OutputThroughput != 3/0.21 {
		t.Errorf("duration %v s, output throughput %v; want 0.21 s and 3/0.21", s.Duration, s.OutputThroughput)
	}
	if got.header.Get("X-Session-ID") != "autoinfer-t1-0" || got.header.Get("X-Run-ID") != "run-a" {
		t.Errorf("headers %v", got.header)
	}
	if so, _ := got.body["stream_options"].(map[string]any); so["include_usage"] != true || got.body["stream"] != true || got.body["max_completion_tokens"] != 3.0 {
		t.Errorf("body %v lacks streaming with include_usage and max_completion_tokens", got.body)
	}
}

// TestCompletionsWithoutUsage: when the server sends no usage, output tokens
// come from counting the text with the shared tokenizer ("alpha beta
// gamma." is 4 tokens), so TPOT = (E2EL − TTFT)/3. Comments and event
// fields between data lines are ignored, and the stream may end without
// [DONE].
func TestCompletionsWithoutUsage(t *testing.T) {
	clock := newScriptClock()
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		playScript(t, w, clock, ": keep-alive\n\nevent: message\n", []event{
			{40 * ms, `{"choices":[{"index":0,"text":"alpha","finish_reason":null}]}`},
			{15 * ms, `{"choices":[{"index":0,"text":" beta","finish_reason":null}]}`},
			{15 * ms, `{"choices":[{"index":0,"text":" gamma.","finish_reason":"length"}]}`},
		})
	})
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 1, WarmupRequests: -1, ReadyCheckTimeout: -1,
		Workload: driver.Workload{Kind: "random", InputLen: 8, OutputLen: 4}}
	res, err := driver.Run(context.Background(), cfg, driver.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Requests[0]
	if !r.Success || r.OutputTokens != 4 || r.TTFTMs != 40 || r.E2ELMs != 70 || r.TPOTMs != 10 || r.PromptTokens != nil {
		t.Fatalf("record %+v; want 4 tokens by count, TTFT 40, E2EL 70, TPOT 10", r)
	}
}
