package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
)

// System is a deployment run in virtual time (adapter/virtual): it takes
// requests at virtual instants and reports their answers as its own events
// happen. Within one instant the driver calls Complete, then Send for every
// request that arrives (in arrival, then index order), then Plan, so
// equal-time order is fixed. A request arrives Config.HTTPInbound after the
// driver sent it (at once when that is 0).
type System interface {
	// Next is the time of the system's earliest pending event; false when
	// it has none.
	Next() (time.Duration, bool)
	// Complete runs every system event at at, calling done for each request
	// that finished.
	Complete(at time.Duration, done func(Answer)) error
	// Send hands request id to the system at at. An error refuses the
	// request (as an HTTP error answer would): it fails without an answer.
	Send(id int, route string, header http.Header, body []byte, at time.Duration) error
	// Plan lets the system start work on what arrived at the current
	// instant.
	Plan()
}

// Canceller is a System that can drop a request in flight, as a client
// that disconnects does over HTTP: what the request holds in the system
// (the router's load on its worker) is released. The driver cancels a
// request when its timeout passes and, when a phase stops, every request
// still in flight. A System without it keeps holding them.
type Canceller interface {
	Cancel(id int)
}

// Windowed is a System that counts its own figures over the measured
// phase (the engines' prefix-cache hits, preemptions, KV usage), as a real
// run reads them from the workers' metrics before and after its window:
// the driver opens the window as the measured phase starts.
type Windowed interface {
	OpenWindow()
}

// Answer is a finished request: its token emission times (virtual,
// absolute) and usage.
type Answer struct {
	ID           int
	Tokens       []time.Duration
	PromptTokens int
	CachedTokens int
}

// Simulate is Run on a virtual clock: the same stream (Generate, so equal
// stream and sent hashes), warm-up, concurrency cap, session follow-ups,
// records and summary, with requests handed to sys at their intended
// virtual times instead of over HTTP. Nothing waits: a run takes as long as
// the system's computation. Multi-turn sessions whose later turns carry the
// server's answers are refused (the answer text is not simulated).
func Simulate(ctx context.Context, cfg Config, sys System) (*Result, error) {
	return SimulateWith(ctx, cfg, sys, SimOptions{})
}

// SimulateWith is Simulate with options (streaming the measured records
// into the summary).
//
// A streamed run of a workload whose items are built one at a time
// (random, trace, multi_turn with synthetic history) also generates its
// requests as they are due: memory then does not grow with the request
// count (lazystream.go).
func SimulateWith(ctx context.Context, cfg Config, sys System, opt SimOptions) (*Result, error) {
	if cfg.HTTPOverhead < 0 || cfg.HTTPInbound < 0 || cfg.HTTPInbound > cfg.HTTPOverhead {
		return nil, fmt.Errorf("http path: inbound %v must lie between 0 and the overhead %v", cfg.HTTPInbound, cfg.HTTPOverhead)
	}
	st, src, err := simStream(cfg, opt)
	if err != nil {
		return nil, err
	}
	tp, err := newTokenPath(cfg, sys)
	if err != nil {
		return nil, err
	}
	tp.tokenSource(src, st)
	cfg = cfg.withDefaults()
	v := &virtual{ctx: ctx, cfg: cfg, sys: sys, tp: tp, header: cfg.baseHeader(), route: cfg.Endpoint}
	newPhase := func(name string, src reqSource) *phase {
		return &phase{cfg: cfg, tok: st.tok, render: st.render, src: src, limit: cfg.Arrival.MaxConcurrency, name: name, header: v.header}
	}
	res := &Result{}
	warmup := st.Warmup
	if cfg.ReadyCheckTimeout > 0 {
		ready := []Request{st.Ready}
		if len(warmup) > 0 {
			ready, warmup = warmup[:1], warmup[1:]
		}
		p := newPhase(phaseWarmup, &sliceSource{reqs: ready})
		if err := cmp.Or(v.run(p), ctx.Err()); err != nil {
			return nil, fmt.Errorf("ready check: %w", err)
		}
		if !p.recs.all[0].Success {
			return nil, fmt.Errorf("ready check: %s", p.recs.all[0].Error)
		}
		res.Warmup.Sent = 1
	}
	if len(warmup) > 0 {
		w := newPhase(phaseWarmup, &sliceSource{reqs: warmup})
		if err := cmp.Or(v.run(w), ctx.Err()); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		res.addWarmup(w.recs.all)
	}
	if w, ok := sys.(Windowed); ok {
		w.OpenWindow()
	}
	m := newPhase(phaseMeasured, src)
	m.maxDuration = time.Duration(cfg.Workload.MaxSeconds * float64(time.Second))
	started := time.Now()
	params := metrics.Params{Goodput: cfg.Goodput, Percentiles: cfg.Percentiles}
	var acc *metrics.Accumulator
	if opt.Stream {
		exact := opt.ExactValues
		if exact <= 0 {
			exact = DefaultExactValues
		}
		acc = metrics.NewAccumulator(params, exact)
	}
	m.acc, m.sink = acc, opt.Records
	if err := v.run(m); err != nil {
		return nil, err
	}
	var s metrics.Summary
	params.Duration = v.end - v.base
	if acc != nil {
		acc.SetDuration(params.Duration)
		s = acc.Summary()
	} else {
		res.Requests = m.recs.all
		s = metrics.Summarize(m.recs.all, params)
	}
	cfg.describe(&s, st, src.Len(), started)
	if s.StreamHash, err = src.Hash(); err != nil {
		return nil, err
	}
	s.SentHash = m.sent.sum()
	res.Summary = s
	return res, ctx.Err()
}

// simStream is the run's stream: produced lazily when streaming a workload
// lazyStream takes, else whole (Generate).
func simStream(cfg Config, opt SimOptions) (*Stream, reqSource, error) {
	if opt.Stream {
		st, src, ok, err := lazyStream(cfg, opt.Workloads)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return st, src, nil
		}
	}
	st, err := Generate(cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range st.Requests {
		if r.Body == nil {
			return nil, nil, errors.New("workload: multi_turn with actual history needs the server's answer text, which the virtual clock does not simulate")
		}
	}
	return st, &sliceSource{reqs: st.Requests, hash: st.Hash()}, nil
}

// virtual is the phases' clock in virtual time: one clock for every phase
// of a run, requests handed to a System instead of sent over HTTP.
type virtual struct {
	ctx     context.Context
	cfg     Config
	sys     System
	tp      *tokenPath // nil: every request goes as its body
	header  http.Header
	route   string
	now     time.Duration         // the clock
	base    time.Duration         // the current phase's start
	end     time.Duration         // when the current phase's last request ended
	p       *phase                // the current phase
	sent    map[int]time.Duration // send times of the requests in flight
	transit minHeap[inTransit]    // sent, not arrived yet (HTTPInbound)
	back    minHeap[answer]       // answered, not at the client yet (HTTPOverhead − HTTPInbound)
	out     time.Duration         // the path back: HTTPOverhead − HTTPInbound
	// timeouts are the requests sent, in send order (so in deadline order,
	// Config.Timeout after the send), read from head; those answered since
	// are skipped.
	timeouts []sentAt
	head     int
	answer   func(Answer) // v.answered, made once
	u        usage        // the answer's usage, reused (measure copies it)
	cached   promptDetails
}

// run runs p in virtual time from the current instant. A phase its context
// stopped returns no error: its records say how it ended, and the caller
// reads ctx.
func (v *virtual) run(p *phase) error {
	v.p, v.transit, v.back, v.timeouts, v.head = p, nil, nil, nil, 0
	v.base, v.end, v.sent = v.now, v.now, map[int]time.Duration{}
	v.out = v.cfg.HTTPOverhead - v.cfg.HTTPInbound
	if v.answer == nil {
		v.answer = v.answered
	}
	return p.run(v)
}

func (v *virtual) advance(p *phase, due time.Duration, hasDue bool) (time.Duration, bool, error) {
	if v.ctx.Err() != nil {
		return v.now - v.base, true, nil
	}
	at, ok := v.sys.Next()
	if len(v.transit) > 0 && (!ok || v.transit[0].at < at) {
		at, ok = v.transit[0].at, true
	}
	if len(v.back) > 0 && (!ok || v.back[0].at < at) {
		at, ok = v.back[0].at, true
	}
	if d, expiring := v.deadline(); expiring && (!ok || d < at) {
		at, ok = d, true
	}
	if hasDue {
		if d := max(v.base+due, v.now); !ok || d < at {
			at, ok = d, true
		}
	}
	if !ok {
		n := p.src.Len()
		return 0, false, fmt.Errorf("virtual clock: %d of %d requests never finished and nothing is left to happen", n-p.finished, n)
	}
	if p.maxDuration > 0 && at > v.base+p.maxDuration {
		return p.maxDuration, true, nil
	}
	v.now = at
	if err := v.sys.Complete(at, v.answer); err != nil {
		return 0, false, err
	}
	for len(v.back) > 0 && v.back[0].at <= at {
		v.deliver(v.back.pop().a)
	}
	for len(v.transit) > 0 && v.transit[0].at <= at {
		x := v.transit.pop()
		if _, ok := v.sent[x.index]; !ok {
			continue // it timed out on the way: the client gave up on it
		}
		if !v.arrive(x) {
			v.answered(Answer{ID: -1 - x.index}) // it held a concurrency slot
		}
	}
	v.expire(at)
	return at - v.base, false, nil
}

// send sends request i: it reaches the system at once, or HTTPInbound
// later; false when the system refused it at once (its record says why).
func (v *virtual) send(p *phase, i int, body []byte, header http.Header, now time.Duration) bool {
	markSent(p.recs.at(i), now)
	p.recs.sentAt(i, ms(now))
	v.sent[i] = v.now
	v.timeouts = append(v.timeouts, sentAt{i, v.now})
	x := inTransit{at: v.now + v.cfg.HTTPInbound, index: i, header: header, body: body}
	if v.cfg.HTTPInbound > 0 {
		v.transit.push(x)
		return true
	}
	if !v.arrive(x) {
		v.forget(i)
		v.end = max(v.end, v.now)
		return false
	}
	return true
}

// arrive hands request x to the system now; false when the system refused
// it (its record says why).
func (v *virtual) arrive(x inTransit) bool {
	if err := v.handOver(x); err != nil {
		r := v.p.recs.at(x.index)
		r.ErrorType, r.Error = "rejected", err.Error()
		return false
	}
	return true
}

func (v *virtual) settle() { v.sys.Plan() }

// answered takes an answer the system gave now (ID < 0: request −ID−1 was
// refused): it reaches the client the path back later.
func (v *virtual) answered(a Answer) {
	if v.out == 0 {
		v.deliver(a)
		return
	}
	v.back.push(answer{at: v.now + v.out, a: a})
}

// deliver hands answer a to the phase: the client has its last token (or
// its refusal) now.
func (v *virtual) deliver(a Answer) {
	i := a.ID
	if i < 0 {
		i = -1 - i
	}
	send, ok := v.sent[i]
	if !ok {
		return // it timed out: the client no longer reads it
	}
	if a.ID >= 0 {
		o := v.outcome(a, send)
		v.p.measure(v.p.recs.at(i), &o)
	}
	v.forget(i)
	v.end = max(v.end, v.now)
	v.p.delivered(i, v.now-v.base, "")
}

// outcome reads answer a of a request sent at send the way the client
// reads a streamed HTTP exchange: one event per token, each delivered
// HTTPOverhead − HTTPInbound after the engine emitted it (the request
// reached the engine HTTPInbound after its send, so TTFT and E2E hold the
// whole overhead, the gaps between tokens none of it).
func (v *virtual) outcome(a Answer, send time.Duration) outcome {
	// An answer came back: over HTTP its status was 200 (a stream's status
	// precedes its tokens).
	o := outcome{sent: true, send: send - v.base, status: http.StatusOK}
	if len(a.Tokens) == 0 {
		o.errType, o.err = errStream, "the engine finished without a token"
		return o
	}
	v.cached.CachedTokens = a.CachedTokens
	v.u = usage{PromptTokens: a.PromptTokens, CompletionTokens: len(a.Tokens), PromptTokensDetails: &v.cached}
	o.usage, o.tokens = &v.u, a.Tokens
	o.first, o.last = a.Tokens[0]+v.out-v.base, a.Tokens[len(a.Tokens)-1]+v.out-v.base
	return o
}

// drain cancels the requests in flight when the phase stops at now, in
// index order: none has an answer the client could read.
func (v *virtual) drain(p *phase, now time.Duration) {
	for _, i := range slices.Sorted(maps.Keys(v.sent)) {
		p.cancel(i)
		v.cancel(i)
	}
	v.end = v.base + now
}

// sentAt is a request sent at send.
type sentAt struct {
	index int
	send  time.Duration
}

// deadline is when the earliest request in flight times out; false when
// none is.
func (v *virtual) deadline() (time.Duration, bool) {
	if v.head == len(v.timeouts) {
		return 0, false
	}
	return v.timeouts[v.head].send + v.cfg.Timeout, true
}

// forget takes request i off those in flight. The timeouts' head is kept
// on a request in flight, so deadline looks nothing up.
func (v *virtual) forget(i int) {
	delete(v.sent, i)
	for v.head < len(v.timeouts) {
		if _, ok := v.sent[v.timeouts[v.head].index]; ok {
			break
		}
		v.head++
	}
	if v.head == len(v.timeouts) || v.head > 1024 && v.head*2 > len(v.timeouts) {
		v.timeouts, v.head = append(v.timeouts[:0], v.timeouts[v.head:]...), 0
	}
}

// expire ends every request whose timeout passed by at, as the wall
// clock's client gives up on it: it is a timeout, its slot frees and its
// session is aborted. An answer the system gives it later is dropped. The
// instant's answers come first: one that arrives at its deadline counts.
func (v *virtual) expire(at time.Duration) {
	for d, ok := v.deadline(); ok && d <= at; d, ok = v.deadline() {
		i := v.timeouts[v.head].index
		v.forget(i)
		o := outcome{sent: true, send: d - v.cfg.Timeout - v.base, errType: errTimeout,
			err: fmt.Sprintf("no answer within the request timeout (%v)", v.cfg.Timeout)}
		v.p.measure(v.p.recs.at(i), &o)
		v.cancel(i)
		v.end = max(v.end, v.now)
		v.p.delivered(i, at-v.base, "")
	}
}

// cancel tells the system that the client dropped request i.
func (v *virtual) cancel(i int) {
	if c, ok := v.sys.(Canceller); ok {
		c.Cancel(i)
	}
}
