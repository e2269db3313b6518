package driver

import (
	"net/http"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// readsPrompts is a Prompted system that only says whether it reads
// prompts.
type readsPrompts bool

func (readsPrompts) SendPrompt(int, string, http.Header, Prompt, time.Duration) error { return nil }
func (r readsPrompts) ReadsPrompts() bool                                             { return bool(r) }

// A run's prompts go blind only when nothing on their way reads them and
// ignore_eos holds (the default).
func TestBlindPromptsOnlyWhenNothingReadsThem(t *testing.T) {
	no := false
	for _, c := range []struct {
		reads     readsPrompts
		ignoreEOS *bool
		want      bool
	}{{false, nil, true}, {true, nil, false}, {false, &no, false}, {true, &no, false}} {
		cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Workload: Workload{Kind: "random", InputLen: 8, OutputLen: 2, IgnoreEOS: c.ignoreEOS},
			Arrival: Arrival{RequestRate: 1}, NumPrompts: 1}
		if got := blindPrompts(cfg.withDefaults(), c.reads); got != c.want {
			t.Errorf("reads %v, ignore_eos %v: blind %v, want %v", c.reads, c.ignoreEOS, got, c.want)
		}
	}
}

// A blind lazy source produces Generate's requests (offsets, lengths,
// sessions, stream hash) with every full trace block and random's shared
// prefix named, not drawn: its span {Key, Blind}, its part "", no id of it
// held; the spans of a prompt's own (partial blocks, tails, bodies) drawn
// as on the drawn path.
func TestBlindSourceMatchesGenerate(t *testing.T) {
	for _, w := range []Workload{
		{Kind: "trace", Path: lazyTrace(t), BlockSize: 16},
		{Kind: "random", InputLen: 20, OutputLen: 4, PrefixLen: 24, RangeRatio: 0.5},
	} {
		cfg := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 9, TrialID: "blind", SessionHeader: "x-session-id",
			Workload: w, Arrival: Arrival{RequestRate: 5}, NumPrompts: 30}
		if w.Kind == "trace" {
			cfg.NumPrompts = 0
		}
		eager, st, src := generatedAndLazy(t, cfg)
		(&tokenPath{blind: true}).tokenSource(src, st)
		if !src.blind {
			t.Fatalf("%s: the source is not blind", w.Kind)
		}
		blind := 0
		n := eachProduced(t, src, func(i int, got *Request) {
			want := &eager.Requests[i]
			if got.Offset != want.Offset || got.InputTokens != want.InputTokens || got.Session != want.Session || got.MaxTokens != want.MaxTokens {
				t.Fatalf("%s request %d: offset %v in %d session %q max %d; Generate: %v %d %q %d", w.Kind, i, got.Offset,
					got.InputTokens, got.Session, got.MaxTokens, want.Offset, want.InputTokens, want.Session, want.MaxTokens)
			}
			spans, _ := src.Tokens(i)
			if got.own && tokenizer.SpansLen(spans) != got.InputTokens {
				t.Fatalf("%s request %d: spans of %d tokens, input %d", w.Kind, i, tokenizer.SpansLen(spans), got.InputTokens)
			}
			for _, s := range spans {
				if s.Key != 0 && (s.Blind == 0 || s.IDs != nil) || s.Key == 0 && s.Blind != 0 {
					t.Fatalf("%s request %d: span %+v: a shared span not blind or an own one blind", w.Kind, i, s)
				}
				if s.Blind != 0 {
					blind++
				}
			}
		})
		if n != len(eager.Requests) || blind == 0 {
			t.Fatalf("%s: %d requests (Generate %d), %d blind spans", w.Kind, n, len(eager.Requests), blind)
		}
		if h, err := src.Hash(); err != nil || h != eager.Hash() {
			t.Errorf("%s: hash %s (%v), Generate's %s", w.Kind, h, err, eager.Hash())
		}
	}
}
