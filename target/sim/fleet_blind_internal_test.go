package sim

import (
	"reflect"
	"testing"
	"time"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// blinded is spans with every keyed span blind: its Key and length, its
// ids dropped (what the driver sends for a trace block it never draws).
func blinded(spans []tokenizer.Span) []tokenizer.Span {
	b := make([]tokenizer.Span, len(spans))
	for i, sp := range spans {
		if b[i] = sp; sp.Key != 0 {
			b[i] = tokenizer.Span{Key: sp.Key, Blind: len(sp.IDs)}
		}
	}
	return b
}

// A prompt whose keyed spans are blind is served as the same prompt with
// their ids drawn, ignore_eos: the same token times, finishes (lengths,
// cached tokens), steps, prefix-cache hits and queries, preemptions, KV
// usage, evictions and cached blocks at the end, on engines with 16- and
// 32-token blocks and without prefix caching, completions and chat (whose
// role marker shifts every span by one token). The block hashes differ
// (a blind piece is not its tokens), but equal wherever the ids' are: the
// hit pattern is the drawn prompt's.
func TestFleetBlindServesAsTheDrawnPrompt(t *testing.T) {
	t.Parallel()
	reqs := spansRequests(200)
	drawn := runSpansFleet(t, reqs, fleetRun{ignoreEOS: true})
	blind := runSpansFleet(t, reqs, fleetRun{blind: true, ignoreEOS: true})
	cached := 0
	for i := range reqs {
		if !reflect.DeepEqual(blind.tokens[i], drawn.tokens[i]) || blind.finishes[i] != drawn.finishes[i] {
			t.Errorf("request %d blind: %v, finish %+v; drawn: %v, finish %+v", i, blind.tokens[i], blind.finishes[i], drawn.tokens[i], drawn.finishes[i])
		}
		cached += drawn.finishes[i].CachedTokens
	}
	if blind.steps != drawn.steps || blind.busy != drawn.busy {
		t.Errorf("blind: %d steps of %v; drawn: %d of %v", blind.steps, blind.busy, drawn.steps, drawn.busy)
	}
	if !reflect.DeepEqual(blind.window, drawn.window) {
		t.Errorf("window counts blind: %+v; drawn: %+v", blind.window, drawn.window)
	}
	if blind.cachedBlocks != drawn.cachedBlocks || blind.evictions != drawn.evictions {
		t.Errorf("blind: %d cached blocks at the end, %d evicted; drawn: %d, %d", blind.cachedBlocks, blind.evictions, drawn.cachedBlocks, drawn.evictions)
	}
	if len(drawn.finishes) != len(reqs) || cached == 0 || drawn.evictions == 0 || drawn.cachedBlocks == 0 {
		t.Errorf("%d of %d requests finished, %d cached tokens, %d evictions, %d cached blocks: the test does not cover the cache",
			len(drawn.finishes), len(reqs), cached, drawn.evictions, drawn.cachedBlocks)
	}
}

// A Fleet refuses a malformed blind span (ids as well, Key 0, a negative
// length) and any blind span on an engine that publishes KV events (they
// carry token ids), naming why, and submits nothing; an engine without
// KV events serves it.
func TestFleetBlindRefusals(t *testing.T) {
	t.Parallel()
	prof, err := LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	fleet := func(kv bool) (*Fleet, *Shape, *fleetRecord) {
		rec := &fleetRecord{tokens: map[int][]time.Duration{}, finishes: map[int]FleetFinish{}}
		f, err := NewFleet([]Options{{Profile: prof, Engine: engcfg.Config{Model: "m"}}}, rec)
		if err != nil {
			t.Fatal(err)
		}
		if kv {
			f.ObserveKVEvents(func(int, int, kvevents.Batch) {})
		}
		sh, err := f.Shape(0, []byte(`{"prompt":"x","max_tokens":1,"ignore_eos":true}`), false)
		if err != nil {
			t.Fatal(err)
		}
		return f, sh, rec
	}
	plain, sh, rec := fleet(false)
	withKV, shKV, _ := fleet(true)
	ok := []tokenizer.Span{{IDs: []uint16{1}}, {Key: 9, Blind: 40}}
	for _, c := range []struct {
		name string
		f    *Fleet
		r    FleetRequest
		want string
	}{
		{"ids too", plain, FleetRequest{Shape: sh, Spans: []tokenizer.Span{{IDs: []uint16{1}, Key: 9, Blind: 1}}},
			"sim fleet: span 0: blind span of 1 tokens with 1 ids (a blind span's ids were never drawn)"},
		{"key 0", plain, FleetRequest{Shape: sh, Spans: []tokenizer.Span{{IDs: []uint16{1}}, {Blind: 3}}},
			"sim fleet: span 1: blind span of 3 tokens with Key 0 (only its Key names its content)"},
		{"negative", plain, FleetRequest{Shape: sh, Spans: []tokenizer.Span{{Key: 9, Blind: -2}}},
			"sim fleet: span 0: blind span of negative length -2"},
		{"kv events", withKV, FleetRequest{Shape: shKV, Spans: ok},
			"sim fleet: span 1: blind span on an engine that publishes KV events: KV events need token ids"},
	} {
		if err := c.f.Submit(c.r, 0); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if !plain.Idle() || !withKV.Idle() {
		t.Fatal("a refused request was submitted")
	}
	if err := plain.Submit(FleetRequest{Tag: 7, Shape: sh, Spans: ok}, 0); err != nil {
		t.Fatalf("a blind span on an engine without KV events: %v", err)
	}
	for plain.Plan(); !plain.Idle(); plain.Plan() {
		at, _ := plain.Next()
		if err := plain.Complete(at); err != nil {
			t.Fatal(err)
		}
	}
	if f := rec.finishes[7]; f.PromptTokens != 41 || f.Generated != 1 {
		t.Errorf("the blind prompt finished as %+v, want 41 prompt tokens and 1 generated", f)
	}
}
