package driver

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestWallHeapIndependentOfRequests: a real-time run that streams its
// records (WithRecords, as every trial does) reads its measured requests
// from the lazy source, so its live heap late in the run does not grow
// with the request count: four times the requests of a multi_turn
// workload (synthetic history) and of a trace, sent over HTTP to a
// simulated engine, leave about the same heap. Holding the stream whole
// (the kept path: every request's fields and, for multi_turn, its body
// with its history) grows by hundreds of bytes per request. The engine
// runs on an in-memory network inside a synctest bubble, so the arrivals
// stay below what it serves (live sessions do not pile up) on any host;
// the trace also goes to an engine on 127.0.0.1 in real time, through
// Run's own client, all due at once (rate inf) behind the concurrency cap,
// so what is live does not depend on the host's speed either. The trace
// file is the same for both counts (num_prompts cuts it), so its lines,
// the workload's input, weigh the same in both.
func TestWallHeapIndependentOfRequests(t *testing.T) {
	const n = 600
	trace := heapTrace(t, 4*n)
	for _, c := range []struct {
		name     string
		cfg      func(n int) Config
		kept     float64 // the least the kept path grows per request
		loopback bool    // real time over TCP to 127.0.0.1, else the bubble
	}{
		{"multi_turn", func(n int) Config {
			return Config{Workload: Workload{Kind: "multi_turn", History: "synthetic", Sessions: n / 4, Turns: 4, InputLen: 48,
				OutputLen: 4, SystemPromptLen: 24, ThinkTimeMs: 100}, Arrival: Arrival{Kind: "poisson", RequestRate: 10}}
		}, 1024, false},
		{"trace", func(n int) Config {
			return Config{NumPrompts: n, Workload: Workload{Kind: "trace", Path: trace, BlockSize: 16, IgnoreTimestamps: true},
				Arrival: Arrival{Kind: "poisson", RequestRate: 40}}
		}, 128, false},
		{"trace_on_loopback", func(n int) Config {
			return Config{NumPrompts: n, Workload: Workload{Kind: "trace", Path: trace, BlockSize: 16, IgnoreTimestamps: true}}
		}, 128, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A first run allocates what a process does once (tables,
			// pools of the HTTP stack), which is no request's memory.
			cfg := c.cfg
			if c.loopback {
				// One engine for every run: its memory is the same in each.
				url := simtest.Start(t, sim.Options{})
				cfg = func(n int) Config {
					cfg := c.cfg(n)
					cfg.BaseURL = url
					return cfg
				}
			}
			wallHeap(t, cfg(n), n, false)
			grow := func(kept bool) float64 {
				small, large := wallHeap(t, cfg(n), n, kept), wallHeap(t, cfg(4*n), 4*n, kept)
				return (float64(large) - float64(small)) / (3 * n)
			}
			lazy, kept := grow(false), grow(true)
			t.Logf("live heap per extra request: streamed %.0f B, kept %.0f B", lazy, kept)
			if lazy > 64 || kept < c.kept {
				t.Errorf("live heap per extra request: streamed %.0f B (want at most 64 B), kept %.0f B (want at least %.0f B)",
					lazy, kept, c.kept)
			}
		})
	}
}

// wallHeapLeft is how many requests are left when wallHeap starts reading
// the heap: more than the source reads ahead (prerenderAhead) until its
// last reading, so the read-ahead window is full at every request count.
const wallHeapLeft = prerenderAhead + 80

// wallHeap runs cfg (n requests) on the wall clock against a simulated
// engine (at cfg's address through Run's own client, else one in a
// bubble), its records streamed, and returns the live heap after a
// collection late in the run (wallHeapLeft). kept plans the stream whole,
// as a run that keeps its records does, and streams the records all the
// same.
func wallHeap(t *testing.T, cfg Config, n int, kept bool) uint64 {
	t.Helper()
	heap := uint64(math.MaxUint64)
	got := 0
	sink := func(*RequestRecord) {
		// The least of five readings, ten requests apart: what every
		// moment holds, not the requests in flight at one.
		if got++; got >= n-wallHeapLeft && got <= n-wallHeapLeft+40 && got%10 == 0 {
			runtime.GC() // what sync.Pools keep for one more cycle goes too
			heap = min(heap, liveHeap())
		}
	}
	var res *Result
	if cfg.BaseURL != "" {
		res = wallRunOf(t, wallSimConfig(cfg), kept, sink)
	} else {
		res = wallOnSim(t, cfg, kept, sink)
	}
	if s := res.Summary; s.Completed != n || got != n {
		t.Fatalf("%d of %d requests completed (%v), %d records handed over", s.Completed, n, s.ErrorsByType, got)
	}
	return heap
}

// wallOnSim runs cfg's measured stream on the wall clock, handing its
// records to sink, inside a synctest bubble against a simulated engine on
// an in-memory network (its latencies then exact on the fake clock).
// kept plans the stream whole instead of reading the lazy source.
func wallOnSim(t *testing.T, cfg Config, kept bool, sink func(*RequestRecord)) *Result {
	t.Helper()
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		net := simtest.NewNetwork()
		// Run's client keeps its connections (it reads each stream to its
		// end), so at most max_concurrency pipes live at any count; the
		// engine's default limits, far above the run's gaps, close none
		// under a request (a keep-alive close racing a send would be a
		// transport error).
		w := simtest.StartPipe(t, net, sim.Options{})
		cfg = wallSimConfig(cfg)
		cfg.BaseURL, cfg.HTTPClient = w.URL, net.Client()
		res = wallRunOf(t, cfg, kept, sink)
	})
	return res
}

// wallRunOf runs cfg's stream on the wall clock, its records handed to
// sink: from the lazy source, or with kept from the stream planned whole.
func wallRunOf(t *testing.T, cfg Config, kept bool, sink func(*RequestRecord)) *Result {
	t.Helper()
	st, src, release, err := wallStream(cfg, !kept)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, isLazy := src.(*lazySource); isLazy == kept {
		t.Fatalf("the source is lazy: %v, want %v", isLazy, !kept)
	}
	o := options{now: time.Now}
	WithRecords(sink, 1)(&o)
	res, err := runStream(t.Context(), cfg.withDefaults(), st, src, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// wallSimConfig is cfg as wallOnSim runs it but for the engine's address.
func wallSimConfig(cfg Config) Config {
	cfg.Model, cfg.Seed, cfg.TrialID, cfg.SessionHeader = simtest.DefaultModel, 4, "wall-sim", "x-session-id"
	cfg.WarmupRequests, cfg.ReadyCheckTimeout, cfg.Arrival.MaxConcurrency = -1, -1, 8
	return cfg
}

// TestWallLazyMatchesKept: multi_turn sessions (synthetic history) sent on
// the wall clock from the lazy source, to a simulated engine, send what
// the kept stream's run sends: the same stream hash (Generate's) and sent
// hash, and per request the same session, turn, prompt (the driver's
// count and the engine's) and outcome. The engine's timings are not
// compared: two runs of one stream on the fake clock can batch a request
// an engine step apart. TestWallStreamedRecordsMatchKept holds the lazy
// source's records to the kept run's field for field against a scripted
// server, also when the run stops early.
func TestWallLazyMatchesKept(t *testing.T) {
	cfg := Config{Workload: Workload{Kind: "multi_turn", History: "synthetic", Sessions: 40, Turns: 4, InputLen: 48,
		OutputLen: 16, RangeRatio: 0.5, SystemPromptLen: 24, ThinkTimeMs: 100}, Arrival: Arrival{Kind: "poisson", RequestRate: 10}}
	run := func(kept bool) ([]RequestRecord, Summary) {
		var recs []RequestRecord
		res := wallOnSim(t, cfg, kept, func(r *RequestRecord) { recs = append(recs, *r) })
		slices.SortFunc(recs, func(a, b RequestRecord) int { return a.Index - b.Index })
		return recs, res.Summary
	}
	kept, ks := run(true)
	lazy, ls := run(false)
	if len(kept) != 160 || len(lazy) != 160 || ks.Completed != 160 || ls.Completed != 160 {
		t.Fatalf("records: kept %d (%d completed), lazy %d (%d); want 160", len(kept), ks.Completed, len(lazy), ls.Completed)
	}
	for i := range kept {
		k, l := kept[i], lazy[i]
		if k.Index != i || l.Index != i || k.SessionID != l.SessionID || k.Turn != l.Turn || k.InputTokens != l.InputTokens ||
			*k.PromptTokens != *l.PromptTokens || k.OutputTokens != l.OutputTokens || k.Success != l.Success {
			t.Fatalf("request %d:\nkept %+v\nlazy %+v", i, k, l)
		}
	}
	c := wallSimConfig(cfg)
	c.BaseURL = "http://127.0.0.1:1" // not in the stream
	st, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	if ks.StreamHash != st.Hash() || ls.StreamHash != ks.StreamHash || ls.SentHash != ks.SentHash {
		t.Errorf("stream hash kept %s, lazy %s, Generate's %s; sent hash kept %s, lazy %s",
			ks.StreamHash, ls.StreamHash, st.Hash(), ks.SentHash, ls.SentHash)
	}
}

// heapTrace writes a trace of n lines of 64 tokens in four blocks, each
// shared with other lines: 38 blocks in all, every one seen within the
// first 77 lines, so the trace's block cache holds the same at any count.
func heapTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"input_length": 64, "output_length": 4, "hash_ids": [%d, %d, %d, %d]}`+"\n", i%10, 10+i%10, 20+i%7, 30+i%11)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A lazy source read ahead hands over its requests in index order, each
// Generate's, also after its producer was stopped midway (what it had
// produced and not handed over comes first, then the source's own), and
// the source's hash is Generate's.
func TestReadAheadStoppedMidway(t *testing.T) {
	cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 5, TrialID: "ahead", SessionHeader: "x-session-id",
		Workload: Workload{Kind: "multi_turn", History: "synthetic", Sessions: 100, Turns: 3, InputLen: 12, OutputLen: 4},
		Arrival:  Arrival{RequestRate: 50}}
	for _, stopAt := range []int{0, 5, prerenderAhead + 20} {
		t.Run(fmt.Sprint(stopAt), func(t *testing.T) {
			eager, _, src := generatedAndLazy(t, cfg)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			a := readAhead(ctx, src)
			a.prime()
			for n := 0; ; n++ {
				if n == stopAt {
					cancel()
					<-a.finished
				}
				i, more, err := a.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !more {
					if n != len(eager.Requests) {
						t.Fatalf("%d requests handed over, Generate made %d", n, len(eager.Requests))
					}
					break
				}
				if got, want := a.At(i), &eager.Requests[i]; i != n || !bytes.Equal(got.Body, want.Body) || got.Offset != want.Offset {
					t.Fatalf("request %d handed over as %d: body or offset differ from Generate's", n, i)
				}
				a.Drop(i)
			}
			a.close()
			if h, err := src.Hash(); err != nil || h != eager.Hash() {
				t.Errorf("hash %s (%v), Generate's %s", h, err, eager.Hash())
			}
		})
	}
}
