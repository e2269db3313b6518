package driver

import (
	"bytes"
	"runtime"
	"testing"
)

// A lazily planned stream sends what Generate's does, byte for byte, with
// the same hash, while keeping no bodies of single-turn random requests;
// other kinds keep theirs.
func TestLazyPlanMatchesGenerate(t *testing.T) {
	base := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 3, TrialID: "lazy", NumPrompts: 50,
		Arrival: Arrival{RequestRate: 20}}
	for _, c := range []struct {
		name     string
		w        Workload
		endpoint string
		lazy     bool
	}{
		{"random completions", Workload{Kind: "random", InputLen: 64, OutputLen: 8, RangeRatio: 0.5, PrefixLen: 16}, "", true},
		{"random chat", Workload{Kind: "random", InputLen: 64, OutputLen: 8}, ChatEndpoint, true},
		{"shared_prefix", Workload{Kind: "shared_prefix", NumGroups: 2, PromptsPerGroup: 3, SystemPromptLen: 16, QuestionLen: 8}, "", false},
		{"multi_turn", Workload{Kind: "multi_turn", Turns: 3, InputLen: 20, OutputLen: 10}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Workload, cfg.Endpoint = c.w, c.endpoint
			eager, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			lazy, err := plan(cfg, true)
			if err != nil {
				t.Fatal(err)
			}
			if lazy.Hash() != eager.Hash() {
				t.Errorf("hash %s, Generate's %s", lazy.Hash(), eager.Hash())
			}
			if len(lazy.Requests) != len(eager.Requests) || len(lazy.Requests) == 0 {
				t.Fatalf("%d requests, Generate made %d", len(lazy.Requests), len(eager.Requests))
			}
			for i := range lazy.Requests {
				q := &lazy.Requests[i]
				if q.lazy != c.lazy || (q.lazy && q.Body != nil) {
					t.Fatalf("request %d: lazy %v with %d body bytes kept, want lazy %v", i, q.lazy, len(q.Body), c.lazy)
				}
				got, err := lazy.body(q)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, eager.Requests[i].Body) {
					t.Fatalf("request %d renders\n%s\nGenerate made\n%s", i, got, eager.Requests[i].Body)
				}
				if q.Offset != eager.Requests[i].Offset || q.InputTokens != eager.Requests[i].InputTokens {
					t.Fatalf("request %d: offset or input tokens differ", i)
				}
			}
		})
	}
}

// The sent digest is the same whatever order the bodies arrive in.
func TestSentDigestOrder(t *testing.T) {
	bodies := [][]byte{[]byte("a"), []byte("bb"), nil, []byte("dddd"), []byte("e")}
	inOrder, shuffled := newSentDigest(), newSentDigest()
	for i, b := range bodies {
		if b != nil {
			inOrder.add(i, "s", bytesSum(b))
		}
	}
	for _, i := range []int{4, 1, 0, 3} {
		shuffled.add(i, "s", bytesSum(bodies[i]))
	}
	if len(shuffled.held) != 2 { // 3 and 4 wait for the never-sent 2
		t.Errorf("%d bodies held, want 2", len(shuffled.held))
	}
	if a, b := inOrder.sum(), shuffled.sum(); a != b {
		t.Errorf("digests differ: %s vs %s", a, b)
	}
}

// A lazily planned random stream holds per request its schedule and
// lengths, not its prompt: the heap it keeps grows by a few hundred bytes
// per request however long the prompts are (eagerly, by the body's
// size, about 6 KB for 1024 tokens). BenchmarkDriverMemory measures the
// whole run's peak.
func TestLazyPlanHoldsNoBodies(t *testing.T) {
	cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 1, TrialID: "mem",
		Workload: Workload{Kind: "random", InputLen: 1024, OutputLen: 16}}
	held := func(n int, lazy bool) float64 {
		cfg.NumPrompts = n
		before := liveHeap()
		st, err := plan(cfg, lazy)
		if err != nil {
			t.Fatal(err)
		}
		after := liveHeap()
		runtime.KeepAlive(st)
		return float64(int64(after)-int64(before)) / float64(n)
	}
	lazy, eager := held(2000, true), held(2000, false)
	t.Logf("heap held per request: lazy %.0f B, eager %.0f B", lazy, eager)
	if lazy > 1024 || eager < 4096 {
		t.Errorf("heap held per request: lazy %.0f B (want < 1 KiB), eager %.0f B (want > 4 KiB: the bodies)", lazy, eager)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
