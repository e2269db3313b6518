package driver

import (
	"bytes"
	"fmt"
	"testing"
)

// A streamed multi_turn workload with synthetic history (the virtual
// clock's lazy source) produces Generate's requests, byte for byte: each
// turn's body with its session's history, offsets of session starts,
// links, think times, input counts, session headers, and the same hash;
// with system prompts, drawn lengths, on both endpoints, and a request
// count that cuts the last session short. Actual history is not streamed
// (its later turns carry the server's answers).
func TestLazyMultiTurnMatchesGenerate(t *testing.T) {
	w := Workload{Kind: "multi_turn", History: "synthetic", Turns: 4, InputLen: 20, OutputLen: 6, RangeRatio: 0.5,
		SystemPromptLen: 12, ThinkTimeMs: 150}
	for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
		for _, n := range []int{0, 26} {
			t.Run(fmt.Sprintf("%s/n=%d", endpoint, n), func(t *testing.T) {
				ww := w
				if n == 0 {
					ww.Sessions = 7
				}
				cfg := Config{BaseURL: "http://127.0.0.1:1", Endpoint: endpoint, Model: "m", Seed: 13, TrialID: "lazy-mt",
					SessionHeader: "x-session-id", NumPrompts: n, Workload: ww, Arrival: Arrival{Kind: "poisson", RequestRate: 4}}
				eager, _, src := generatedAndLazy(t, cfg)
				turns := 0
				eachProduced(t, src, func(i int, got *Request) {
					want := &eager.Requests[i]
					if !bytes.Equal(got.Body, want.Body) || got.Offset != want.Offset || got.Prev != want.Prev || got.Turn != want.Turn ||
						got.Think != want.Think || got.InputTokens != want.InputTokens || got.Session != want.Session || got.MaxTokens != want.MaxTokens {
						t.Fatalf("request %d: %+v\nGenerate's: %+v", i, *got, *want)
					}
					if got.Turn > 0 {
						turns++
					}
				})
				if src.Len() != len(eager.Requests) || turns == 0 || turns*4 < len(eager.Requests) {
					t.Fatalf("%d requests (%d later turns), Generate made %d", src.Len(), turns, len(eager.Requests))
				}
				if h, err := src.Hash(); err != nil || h != eager.Hash() {
					t.Fatalf("hash %s (%v), Generate's %s", h, err, eager.Hash())
				}
			})
		}
	}
	actual := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 13, Workload: Workload{Kind: "multi_turn", Turns: 3, Sessions: 2, InputLen: 8, OutputLen: 4}}
	if _, _, ok, err := lazyStream(actual, nil); ok || err != nil {
		t.Fatalf("actual history: lazy %v (%v), want Generate's stream", ok, err)
	}
}
