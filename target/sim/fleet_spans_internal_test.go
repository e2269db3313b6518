package sim

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// fleetRecord is what a fleet's observer heard of its requests and
// KV events.
type fleetRecord struct {
	tokens   map[int][]time.Duration
	finishes map[int]FleetFinish
	kv       []kvevents.Batch
	// At the end of the run: the fleet's steps and their time, its window
	// counts from the first arrival, the blocks its caches hold and the
	// cached blocks allocation evicted.
	steps        int
	busy         time.Duration
	window       []WindowCounts
	cachedBlocks int
	evictions    int
}

func (r *fleetRecord) Token(tag int, at time.Duration) { r.tokens[tag] = append(r.tokens[tag], at) }
func (r *fleetRecord) Finished(tag int, f FleetFinish) {
	r.finishes[tag] = f
}

// spansRequest is one request of the parity test: its prompt as spans,
// its length, arrival, worker and whether it is a chat request.
type spansRequest struct {
	spans  []tokenizer.Span
	max    int
	at     time.Duration
	worker int
	chat   bool
}

// spansRequests draws n requests whose prompts share keyed spans (not
// multiples of a block) and extend earlier prompts, with fresh spans of
// their own between, arriving close enough to queue and to evict.
func spansRequests(n int) []spansRequest {
	rnd := rand.New(rand.NewPCG(30, 1))
	ids := func(n int) []uint16 {
		s := make([]uint16, n)
		for i := range s {
			s[i] = uint16(rnd.IntN(tokenizer.VocabSize))
		}
		return s
	}
	var pool []tokenizer.Span
	for k := range 12 {
		pool = append(pool, tokenizer.Span{IDs: ids(20 + rnd.IntN(90)), Key: uint64(k + 1)})
	}
	var reqs []spansRequest
	at := time.Duration(0)
	for i := range n {
		var spans []tokenizer.Span
		if i > 0 && rnd.IntN(3) > 0 {
			prev := reqs[rnd.IntN(i)].spans
			spans = slices.Clone(prev[:rnd.IntN(len(prev)+1)])
		}
		for range 1 + rnd.IntN(4) {
			if rnd.IntN(3) > 0 {
				spans = append(spans, pool[rnd.IntN(len(pool))])
			} else {
				spans = append(spans, tokenizer.Span{IDs: ids(1 + rnd.IntN(40))})
			}
		}
		at += time.Duration(rnd.IntN(30)) * time.Millisecond
		reqs = append(reqs, spansRequest{spans: spans, max: 1 + rnd.IntN(40), at: at, worker: i % 3, chat: rnd.IntN(2) == 0})
	}
	return reqs
}

// fleetRun is how runSpansFleet serves its requests: each prompt as its
// spans, flattened into Prompt (flat) or with its keyed spans blind (their
// Key and length, no ids); recording KV events (kv) or not; with
// ignore_eos (a blind prompt's lengths are the drawn one's only then).
type fleetRun struct {
	flat, blind, kv, ignoreEOS bool
}

// runSpansFleet serves reqs on a fleet of three workers (16- and 32-token
// blocks with small caches, one without prefix caching) as run says, and
// returns what the fleet reported.
func runSpansFleet(t *testing.T, reqs []spansRequest, run fleetRun) *fleetRecord {
	t.Helper()
	prof, err := LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	off := false
	cfgs := []engcfg.Config{
		{Model: "m", MaxModelLen: 1024, NumGPUBlocksOverride: 96},
		{Model: "m", MaxModelLen: 1024, NumGPUBlocksOverride: 48, BlockSize: 32},
		{Model: "m", MaxModelLen: 1024, EnablePrefixCaching: &off},
	}
	var workers []Options
	for _, c := range cfgs {
		workers = append(workers, Options{Profile: prof, Engine: c})
	}
	rec := &fleetRecord{tokens: map[int][]time.Duration{}, finishes: map[int]FleetFinish{}}
	f, err := NewFleet(workers, rec)
	if err != nil {
		t.Fatal(err)
	}
	if run.kv {
		f.ObserveKVEvents(func(_, _ int, b kvevents.Batch) { rec.kv = append(rec.kv, b) })
	}
	for _, e := range f.ranks { // no CPU tier here: the hook is free
		e.pool.evicted = func(uint64) { rec.evictions++ }
	}
	eos := ""
	if run.ignoreEOS {
		eos = `,"ignore_eos":true`
	}
	var shapes [3][2]*Shape
	for w := range shapes {
		if shapes[w][0], err = f.Shape(w, []byte(`{"model":"m","prompt":"x","max_tokens":1,"temperature":0`+eos+`}`), false); err != nil {
			t.Fatal(err)
		}
		if shapes[w][1], err = f.Shape(w, []byte(`{"messages":[{"role":"user","content":"x"}],"max_tokens":1,"temperature":0.8,"seed":7`+eos+`}`), true); err != nil {
			t.Fatal(err)
		}
	}
	f.OpenWindow()
	for i := 0; i < len(reqs) || !f.Idle(); {
		at, ok := f.Next()
		if i < len(reqs) && (!ok || reqs[i].at < at) {
			at = reqs[i].at
		}
		if err := f.Complete(at); err != nil {
			t.Fatal(err)
		}
		for ; i < len(reqs) && reqs[i].at == at; i++ {
			r := reqs[i]
			fr := FleetRequest{Worker: r.worker, Tag: i, Shape: shapes[r.worker][btoi(r.chat)], MaxTokens: r.max}
			switch {
			case run.flat:
				fr.Prompt = flatten(r.spans)
			case run.blind:
				fr.Spans = blinded(r.spans)
			default:
				fr.Spans = r.spans
			}
			if err := f.Submit(fr, at); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		f.Plan()
	}
	rec.steps, rec.busy = f.Steps()
	rec.window = f.Window()
	for _, e := range f.ranks {
		for _, b := range e.pool.blocks {
			rec.cachedBlocks += btoi(b.cached)
		}
	}
	return rec
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A request whose prompt comes as spans is served as the same request
// with its ids flat: the same token times, finishes, cached tokens and KV
// events, on engines with and without prefix caching, completions and
// chat (whose role markers wrap the spans).
func TestFleetSpansServeAsTheFlatPrompt(t *testing.T) {
	t.Parallel()
	reqs := spansRequests(150)
	flat, spans := runSpansFleet(t, reqs, fleetRun{flat: true, kv: true}), runSpansFleet(t, reqs, fleetRun{kv: true})
	cached := 0
	for i := range reqs {
		if !reflect.DeepEqual(spans.tokens[i], flat.tokens[i]) || spans.finishes[i] != flat.finishes[i] {
			t.Errorf("request %d as spans: %v, finish %+v; flat: %v, finish %+v", i, spans.tokens[i], spans.finishes[i], flat.tokens[i], flat.finishes[i])
		}
		cached += flat.finishes[i].CachedTokens
	}
	if !reflect.DeepEqual(spans.kv, flat.kv) {
		t.Errorf("KV events differ: %d batches as spans, %d flat", len(spans.kv), len(flat.kv))
	}
	if len(flat.finishes) != len(reqs) || cached == 0 || len(flat.kv) == 0 {
		t.Errorf("%d of %d requests finished, %d cached tokens, %d KV batches: the test does not cover the cache", len(flat.finishes), len(reqs), cached, len(flat.kv))
	}
}

// A Fleet refuses Spans without a Shape, or with Prompt too, and a spans
// prompt with no token or an id out of the vocabulary, as it refuses the
// flat prompt.
func TestFleetSpansRefusals(t *testing.T) {
	t.Parallel()
	prof, err := LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet([]Options{{Profile: prof, Engine: engcfg.Config{Model: "m"}}}, &fleetRecord{})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := f.Shape(0, []byte(`{"prompt":"x","max_tokens":1}`), false)
	if err != nil {
		t.Fatal(err)
	}
	one := []tokenizer.Span{{IDs: []uint16{1}}}
	for _, c := range []struct {
		name string
		r    FleetRequest
		want string
	}{
		{"no shape", FleetRequest{Body: []byte(`{"prompt":"x"}`), Spans: one}, "sim fleet: Spans needs a Shape and no Prompt"},
		{"prompt too", FleetRequest{Shape: sh, Prompt: []int{1}, Spans: one}, "sim fleet: Spans needs a Shape and no Prompt"},
		{"empty", FleetRequest{Shape: sh, Spans: []tokenizer.Span{{Key: 3}}}, "BadRequestError: The prompt cannot be empty."},
		{"vocabulary", FleetRequest{Shape: sh, Spans: []tokenizer.Span{{IDs: []uint16{1, tokenizer.VocabSize}, Key: 3}}},
			"BadRequestError: Token id 32768 is out of vocabulary"},
	} {
		if err := f.Submit(c.r, 0); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
