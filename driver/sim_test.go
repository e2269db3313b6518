package driver_test

import (
	"context"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestAgainstSimulatedEngine drives a fast simulated engine on loopback
// with shared-prefix traffic on both endpoints: every request completes
// with exactly max_tokens output tokens (ignore_eos), the completions
// endpoint's usage.prompt_tokens equals the driver's own count (one
// tokenizer), and requests after the first of a group hit the prefix cache.
func TestAgainstSimulatedEngine(t *testing.T) {
	url := simtest.Start(t, sim.Options{})
	for _, endpoint := range []string{driver.CompletionsEndpoint, driver.ChatEndpoint} {
		cfg := driver.Config{BaseURL: url, Endpoint: endpoint, Model: simtest.DefaultModel, Seed: 5, WarmupRequests: 4,
			Workload: driver.Workload{Kind: "shared_prefix", NumGroups: 2, PromptsPerGroup: 6, SystemPromptLen: 96, QuestionLen: 8, OutputLen: 4},
			Arrival:  driver.Arrival{MaxConcurrency: 1}}
		res, err := driver.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Summary; s.Completed != 12 || s.TotalOutputTokens != 48 || s.TotalInputTokens != 12*104 {
			t.Fatalf("%s: completed %d, tokens in %d out %d; want 12, 1248, 48", endpoint, s.Completed, s.TotalInputTokens, s.TotalOutputTokens)
		}
		hits := 0
		for _, r := range res.Requests {
			if r.PromptTokens == nil || r.CachedTokens == nil {
				t.Fatalf("%s: request %d has no usage: %+v", endpoint, r.Index, r)
			}
			if endpoint == driver.CompletionsEndpoint && *r.PromptTokens != r.InputTokens {
				t.Errorf("request %d: server counted %d prompt tokens, driver %d", r.Index, *r.PromptTokens, r.InputTokens)
			}
			if *r.CachedTokens >= 80 {
				hits++
			}
		}
		// Each group's first request misses; the other 10 reuse the
		// 96-token system prompt's full 16-token blocks (≥ 80 tokens).
		if hits < 10 {
			t.Errorf("%s: %d requests hit the prefix cache, want ≥ 10", endpoint, hits)
		}
	}
}
