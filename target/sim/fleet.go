package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// FleetObserver receives what a Fleet's engines did, in virtual time since
// the fleet's start. Calls come from the goroutine driving the fleet, in
// event order.
type FleetObserver interface {
	// Token is one generated token of the request tagged tag.
	Token(tag int, at time.Duration)
	// Finished is the end of the request tagged tag.
	Finished(tag int, f FleetFinish)
}

// FleetFinish is how one request ended.
type FleetFinish struct {
	At           time.Duration
	Reason       string // "length", "stop" or "abort"
	Generated    int
	PromptTokens int
	// CachedTokens is the prefix-cache hit at admission (local and CPU tier).
	CachedTokens int
	// Held is true when the engine keeps the request's KV for a decode
	// engine to pull (a prefill leg): ReleaseHeld frees it.
	Held bool
}

// FleetRequest is one request handed to a Fleet engine.
type FleetRequest struct {
	Worker, Rank int
	// Tag names the request to the observer; ID is its request id (the key
	// its held KV is kept under).
	Tag  int
	ID   string
	Body []byte
	Chat bool
	// Shape, when set, stands for Body: the request is Shape's body with
	// Prompt (or Spans) as its prompt (the user message's content, for
	// chat) and MaxTokens as its length (0: Shape's own), and no body is
	// parsed or tokenized (the virtual clock's token path).
	Shape  *Shape
	Prompt []int
	// Spans, instead of Prompt, is the prompt as the workload's shared
	// spans: the engine keeps them as they are (no flat copy) and hashes a
	// span with a Key once per prefix it follows (the fleet's memo), not
	// per prompt. A blind span (no ids, tokenizer.Span.Blind) is hashed
	// by its Key in O(blocks) (feedBlind); an engine that publishes KV
	// events refuses it, as they carry token ids.
	Spans     []tokenizer.Span
	MaxTokens int
	// Pulled marks a decode leg whose prompt KV was transferred from a
	// prefill engine: like a successful pull over HTTP, the engine skips
	// recomputing all but the last prompt token.
	Pulled bool
}

// Fleet runs the simulated engines of a whole deployment on one
// discrete-event clock in the calling goroutine: the real scheduler, KV
// cache and step model of every rank (the code an HTTP-served engine runs),
// without HTTP, timers, sleeping or a goroutine per request. The caller
// submits requests at virtual times and advances the clock from one event
// to the next: step ends come from Next, arrivals are the caller's.
//
// Same-instant order is total and fixed: step ends complete in rank order (workers in the order given, ranks within a
// worker), then the caller's arrivals, then Plan starts a step on every
// idle rank with work, in rank order. Nothing reads the wall clock, so a
// run is a pure function of its inputs.
//
// A fleet may model the live loop's lateness with two constants (SetLag):
// a step completes and emits its tokens lag after its planned end, the
// next step is planned at that moment (so what arrived in between joins
// it) and scheduled from the planned end by the live loop's own catch-up
// rule (stepStart); a step an idle rank plans when an arrival wakes it
// starts at once (the live loop's channel receive takes microseconds) and
// completes wake, not lag, after its planned end. A step planned with its
// end already past (a late step's catch-up) completes at once, late by
// nothing, since the live loop then does not wait on a timer.
type Fleet struct {
	servers []*Server
	ranks   []*engine
	first   []int // first global rank of each server
	obs     FleetObserver

	now   time.Time
	busy  []bool // a step runs
	dirty []bool
	todo  []int    // ranks marked dirty, to plan
	ends  stepEnds // running steps' ends

	lag     time.Duration // modelled step lateness (SetLag)
	wake    time.Duration // modelled lateness of a step planned on waking (SetLag)
	lastEnd []time.Time   // per rank: planned end of its last step; zero after idling
	awake   []bool        // per rank: a step just completed; false: the loop slept

	steps    int
	busyTime time.Duration

	// counts are the ranks' window counters (nil when the engines keep
	// Prometheus metrics); opened is their value at OpenWindow, windowAt
	// its instant.
	counts   []rankCounts
	opened   []rankCounts
	windowAt time.Time

	// memo keeps the block hashes of spans prompts repeat (Spans).
	memo promptMemo
}

// fleetBase is virtual time zero.
var fleetBase = time.Unix(0, 0).UTC()

// NewFleet builds one engine per Options (each with its Options' data
// parallelism, role, profile and KV settings) on a shared virtual clock.
// Faults, an injected clock and admin routes do not apply.
func NewFleet(workers []Options, obs FleetObserver) (*Fleet, error) {
	return newFleet(workers, obs, false)
}

// newFleet is NewFleet; with metrics, the engines keep the metrics a
// served engine exposes (Replay reports them), else only the counters a
// row's window figures need (OpenWindow, Window).
func newFleet(workers []Options, obs FleetObserver, metrics bool) (*Fleet, error) {
	if len(workers) == 0 {
		return nil, errors.New("sim fleet: no workers")
	}
	f := &Fleet{obs: obs, now: fleetBase, windowAt: fleetBase}
	for i, o := range workers {
		o.Faults, o.Clock, o.EnableAdmin = Faults{}, fleetClock{f}, false
		s, err := New(o)
		if err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		f.servers = append(f.servers, s)
		f.first = append(f.first, len(f.ranks))
		f.ranks = append(f.ranks, s.ranks...)
	}
	if !metrics {
		// Never scraped: the observer hears every token, and the window's
		// counters are kept in plain memory.
		f.counts, f.opened = make([]rankCounts, len(f.ranks)), make([]rankCounts, len(f.ranks))
		for g, e := range f.ranks {
			f.counts[g].kv = usage{f: f, since: fleetBase}
			e.m = countingMetrics(&f.counts[g])
		}
	}
	f.busy = make([]bool, len(f.ranks))
	f.dirty = make([]bool, len(f.ranks))
	f.lastEnd = make([]time.Time, len(f.ranks))
	f.awake = make([]bool, len(f.ranks))
	return f, nil
}

// SetLag sets the modelled lateness of every rank's loop (0: none, the
// default): lag, how long after a step's planned end the live loop
// completes it (engine_lag_ms), and wake, the same for a step an idle
// loop planned when an arrival woke it (engine_wake_ms). Set it before the
// first Submit.
func (f *Fleet) SetLag(lag, wake time.Duration) error {
	if lag < 0 {
		return fmt.Errorf("sim fleet: lag %v is negative", lag)
	}
	if wake < 0 {
		return fmt.Errorf("sim fleet: wake %v is negative", wake)
	}
	if f.steps > 0 || len(f.ends) > 0 {
		return errors.New("sim fleet: lag set after the fleet started")
	}
	f.lag, f.wake = lag, wake
	return nil
}

// Ranks is the number of data-parallel ranks of worker w.
func (f *Fleet) Ranks(w int) int { return len(f.servers[w].ranks) }

// Model is the served model name (every worker serves the same).
func (f *Fleet) Model() string { return f.servers[0].cfg.model }

// Now is the fleet's virtual time.
func (f *Fleet) Now() time.Duration { return f.now.Sub(fleetBase) }

// Steps and Busy are the engine steps run and their modelled time, all ranks.
func (f *Fleet) Steps() (int, time.Duration) { return f.steps, f.busyTime }

// advance moves the clock to at; time never goes back.
func (f *Fleet) advance(at time.Duration) error {
	t := fleetBase.Add(at)
	if t.Before(f.now) {
		return fmt.Errorf("sim fleet: time went back from %v to %v", f.Now(), at)
	}
	f.now = t
	return nil
}

// Submit parses r.Body as the HTTP handler does (or takes r.Shape's
// request with r.Prompt or r.Spans) and hands the request to its rank at virtual time
// at. A body the engine would refuse is an error
// carrying the engine's message; nothing is submitted then.
func (f *Fleet) Submit(r FleetRequest, at time.Duration) error {
	if err := f.advance(at); err != nil {
		return err
	}
	if r.Worker < 0 || r.Worker >= len(f.servers) || r.Rank < 0 || r.Rank >= len(f.servers[r.Worker].ranks) {
		return fmt.Errorf("sim fleet: no worker %d rank %d", r.Worker, r.Rank)
	}
	s := f.servers[r.Worker]
	if r.Shape != nil {
		if err := checkBlind(r.Spans, f.ranks[f.first[r.Worker]+r.Rank].kv != nil); err != nil {
			return err
		}
	}
	req, err := f.parse(r)
	if err != nil {
		return err
	}
	sq := f.newSeq(r.Worker, r.Tag, r.ID, req)
	if req.kv != nil && s.cfg.role == RolePrefill && req.kv.DoRemoteDecode && !req.stream {
		sq.holdKV = true
	}
	if r.Pulled {
		sq.remoteKV = sq.promptLen - 1 // what a successful pullKV yields
	}
	f.queue(r.Worker, r.Rank, sq)
	return nil
}

// parse is r's request as worker r.Worker's engine takes it: r.Shape's
// with r.Prompt or r.Spans, else r.Body parsed as the HTTP handler does.
func (f *Fleet) parse(r FleetRequest) (*genRequest, error) {
	cfg := &f.servers[r.Worker].cfg
	var req *genRequest
	var e *apiError
	switch {
	case r.Spans != nil && (r.Shape == nil || r.Prompt != nil):
		return nil, errors.New("sim fleet: Spans needs a Shape and no Prompt")
	case r.Shape != nil:
		req, e = r.Shape.request(r.Prompt, r.Spans, r.MaxTokens, cfg)
	default:
		req, e = parseGenBody(r.Body, r.Chat, cfg)
	}
	if e != nil {
		return nil, fmt.Errorf("%s: %s", e.typ, e.msg)
	}
	return req, nil
}

// submitSeq hands a parsed request to worker w's rank at virtual time at
// (Replay's requests are token ids, not a body).
func (f *Fleet) submitSeq(w, rank, tag int, id string, req *genRequest, at time.Duration) error {
	if err := f.advance(at); err != nil {
		return err
	}
	f.queue(w, rank, f.newSeq(w, tag, id, req))
	return nil
}

// newSeq is worker w's sequence for req, reporting to the fleet as tag.
func (f *Fleet) newSeq(w, tag int, id string, req *genRequest) *seq {
	sq := f.servers[w].newSeq(id, req, &f.memo)
	sq.fleet, sq.tag = f, tag
	return sq
}

// queue hands sq to worker w's rank; it plans at the next Plan.
func (f *Fleet) queue(w, rank int, sq *seq) {
	g := f.first[w] + rank
	f.ranks[g].submit(sq)
	f.mark(g)
}

// ReleaseHeld frees the KV that worker w's rank keeps for request id, as
// a decode engine's completed pull does. It reports false when nothing is
// held under id.
func (f *Fleet) ReleaseHeld(w, rank int, id string, at time.Duration) (bool, error) {
	if err := f.advance(at); err != nil {
		return false, err
	}
	g := f.first[w] + rank
	e := f.ranks[g]
	h, ok := e.lookupHeld(id)
	if !ok {
		return false, nil
	}
	ok = e.releaseHeld(id, h)
	f.mark(g)
	return ok, nil
}

// TransferTime is how long decode worker w takes to pull tokens tokens of
// KV from a prefill engine on an otherwise idle link: the profile's setup
// latency, descriptor posting and link time, as its live pull sleeps.
func (f *Fleet) TransferTime(w, tokens int) time.Duration {
	s := f.servers[w]
	return s.cfg.profile.transferSetup(tokens, s.cfg.blockSize) + s.cfg.profile.linkTime(tokens)
}

// Next is the end of the earliest running step; false when every rank is
// idle.
func (f *Fleet) Next() (time.Duration, bool) {
	if len(f.ends) == 0 {
		return 0, false
	}
	return f.ends[0].at, true
}

// Complete applies every step that ends at at (its planned end plus the
// lateness), in rank order; the observer hears
// each token and finish.
func (f *Fleet) Complete(at time.Duration) error {
	if err := f.advance(at); err != nil {
		return err
	}
	for len(f.ends) > 0 && f.ends[0].at <= at {
		g := f.ends.pop().rank
		e := f.ranks[g]
		e.mu.Lock()
		e.complete(f.now)
		e.mu.Unlock()
		// The loop is awake: it plans the next step at this instant.
		f.busy[g], f.awake[g] = false, true
		f.mark(g)
	}
	return nil
}

// Plan starts a step on every idle rank that changed since its last plan
// and has work, in rank order. A step planned by a rank whose loop slept
// (no step just completed) is late by the wake-up lateness, any other by
// the lag.
func (f *Fleet) Plan() {
	slices.Sort(f.todo)
	for _, g := range f.todo {
		f.dirty[g] = false
		if f.busy[g] {
			continue
		}
		late := f.lag
		if !f.awake[g] {
			late = f.wake
		}
		f.awake[g] = false
		e := f.ranks[g]
		e.mu.Lock()
		dur := e.plan(f.now)
		work := len(e.items) > 0
		e.mu.Unlock()
		if !work {
			f.lastEnd[g] = time.Time{}
			continue
		}
		end := stepStart(f.now, f.lastEnd[g]).Add(dur)
		f.lastEnd[g] = end
		f.busy[g] = true
		// A step whose planned end has passed (the catch-up after a step
		// that completed later than this one's whole schedule) completes
		// at once, as the live loop does not wait for it: its timer lag
		// does not apply, and its end is never in the past.
		done := f.now
		if end.After(f.now) {
			done = end.Add(late)
		}
		f.ends.push(stepEnd{at: done.Sub(fleetBase), rank: g})
		f.steps++
		f.busyTime += dur
	}
	f.todo = f.todo[:0]
}

// mark queues rank g for the next Plan.
func (f *Fleet) mark(g int) {
	if !f.dirty[g] {
		f.dirty[g] = true
		f.todo = append(f.todo, g)
	}
}

// Idle reports whether no rank runs or has anything waiting.
func (f *Fleet) Idle() bool {
	if len(f.ends) > 0 || len(f.todo) > 0 {
		return false
	}
	for _, e := range f.ranks {
		if len(e.incoming)+len(e.waiting)+len(e.running) > 0 {
			return false
		}
	}
	return true
}

// token and finished relay the engine's events to the observer.
func (f *Fleet) token(s *seq, now time.Time) { f.obs.Token(s.tag, now.Sub(fleetBase)) }

func (f *Fleet) finished(s *seq, now time.Time) {
	f.obs.Finished(s.tag, FleetFinish{At: now.Sub(fleetBase), Reason: s.finishReason, Generated: s.generated(),
		PromptTokens: s.promptLen, CachedTokens: int(s.cachedTokens.Load()), Held: s.heldBlocks != nil})
}

// event is a Replay arrival due at a virtual time (key: its trace
// index). Events order by time, then key.
type event struct {
	at  time.Time
	key int
}

type events []event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || (h[i].at.Equal(h[j].at) && h[i].key < h[j].key)
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fleetClock is the fleet's virtual time. Nothing waits on it: engines in a
// fleet never run their live loop, and held KV is released by the fleet
// when its transfer completes (a hold never expires in virtual time).
type fleetClock struct{ f *Fleet }

func (c fleetClock) Now() time.Time                        { return c.f.now }
func (c fleetClock) NewTimer(time.Duration) Timer          { return inertTimer{} }
func (c fleetClock) AfterFunc(time.Duration, func()) Timer { return inertTimer{} }

type inertTimer struct{}

func (inertTimer) C() <-chan time.Time      { return nil }
func (inertTimer) Reset(time.Duration) bool { return false }
func (inertTimer) Stop() bool               { return false }
