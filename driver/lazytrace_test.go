package driver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A streamed trace (the virtual clock's lazy source) sends what
// Generate's stream does, byte for byte and at the same offsets, with the
// same hash and sessions, rendering each prompt from its trace line as it
// falls due.
func TestLazyTraceMatchesGenerate(t *testing.T) {
	path := lazyTrace(t)
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore_timestamps=%v", ignore), func(t *testing.T) {
			cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 9, TrialID: "lazy-trace", SessionHeader: "x-session-id",
				Workload: Workload{Kind: "trace", Path: path, BlockSize: 16, IgnoreTimestamps: ignore},
				Arrival:  Arrival{RequestRate: 5}}
			eager, st, src := generatedAndLazy(t, cfg)
			if len(st.Warmup) != len(eager.Warmup) || !bytes.Equal(st.Ready.Body, eager.Ready.Body) {
				t.Errorf("warm-up: %d requests (Generate %d), ready bodies equal %v", len(st.Warmup), len(eager.Warmup), bytes.Equal(st.Ready.Body, eager.Ready.Body))
			}
			n := eachProduced(t, src, func(i int, got *Request) {
				want := &eager.Requests[i]
				if !bytes.Equal(got.Body, want.Body) || got.Offset != want.Offset || got.InputTokens != want.InputTokens ||
					got.Session != want.Session || got.MaxTokens != want.MaxTokens {
					t.Fatalf("request %d: body %q offset %v in %d session %q max %d; Generate: %q %v %d %q %d", i, got.Body, got.Offset,
						got.InputTokens, got.Session, got.MaxTokens, want.Body, want.Offset, want.InputTokens, want.Session, want.MaxTokens)
				}
			})
			if n != len(eager.Requests) {
				t.Fatalf("%d requests, Generate made %d", n, len(eager.Requests))
			}
			if h, err := src.Hash(); err != nil || h != eager.Hash() {
				t.Errorf("hash %s (%v), Generate's %s", h, err, eager.Hash())
			}
		})
	}
}

// Workloads of single requests built whole (shared_prefix, with its system
// prompts) stream their bodies too, sending what Generate builds; sessions
// with actual history do not (lazymultiturn_test.go streams synthetic ones).
func TestLazyStreamBuiltSingles(t *testing.T) {
	base := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 3, TrialID: "lazy", Arrival: Arrival{RequestRate: 20}}
	for _, c := range []struct {
		w    Workload
		lazy bool
	}{
		{Workload{Kind: "shared_prefix", NumGroups: 3, PromptsPerGroup: 4, SystemPromptLen: 16, QuestionLen: 8}, true},
		{Workload{Kind: "multi_turn", Turns: 3, InputLen: 20, OutputLen: 10, Sessions: 2}, false},
	} {
		for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
			cfg := base
			cfg.Workload, cfg.Endpoint = c.w, endpoint
			_, src, ok, err := lazyStream(cfg, nil)
			if err != nil || ok != c.lazy {
				t.Fatalf("%s: lazy %v (%v), want %v", c.w.Kind, ok, err, c.lazy)
			}
			if !ok {
				continue
			}
			eager, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for n := range len(eager.Requests) {
				i, _, err := src.Next()
				if err != nil {
					t.Fatal(err)
				}
				got, want := src.At(i), &eager.Requests[i]
				if i != n || !bytes.Equal(got.Body, want.Body) || got.Offset != want.Offset || got.InputTokens != want.InputTokens {
					t.Fatalf("%s %s request %d: body, offset or input tokens differ from Generate's", c.w.Kind, endpoint, i)
				}
				src.Drop(i)
			}
			if h, err := src.Hash(); err != nil || h != eager.Hash() {
				t.Fatalf("%s %s: hash %s (%v), Generate's %s", c.w.Kind, endpoint, h, err, eager.Hash())
			}
		}
	}
}

// lazyTrace writes a 40-line Mooncake-format trace of 16-token blocks,
// some shared, with sessions and one verbatim prompt.
func lazyTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i := range 40 {
		ids := fmt.Sprintf("[%d, %d, %d]", i%3, 10+i%5, 100+i)
		switch {
		case i == 7:
			fmt.Fprintf(&b, `{"timestamp": %d, "prompt": "a verbatim prompt", "output_length": 3}`+"\n", 1000+i*250)
		case i%4 == 0:
			fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 40, "output_length": 5, "hash_ids": %s, "session_id": "s%d"}`+"\n", 1000+i*250, ids, i%3)
		default:
			fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": %s}`+"\n", 1000+i*250, 30+i%20, ids)
		}
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// generatedAndLazy is cfg's stream from Generate and its lazy stream.
func generatedAndLazy(t *testing.T, cfg Config) (eager, lazy *Stream, src *lazySource) {
	t.Helper()
	eager, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lazy, src, ok, err := lazyStream(cfg, nil)
	if err != nil || !ok {
		t.Fatalf("lazy stream: ok %v, %v", ok, err)
	}
	return eager, lazy, src
}

// eachProduced calls fn with every request src produces, in order, and
// drops it; it returns how many there were.
func eachProduced(t *testing.T, src *lazySource, fn func(i int, r *Request)) int {
	t.Helper()
	for n := 0; ; n++ {
		i, more, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return n
		}
		fn(i, src.At(i))
		src.Drop(i)
	}
}
