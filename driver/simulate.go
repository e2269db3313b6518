package driver

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/http"
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
// A streamed run of a workload whose requests depend on their index alone
// (random) also generates its requests as they are due: memory then does
// not grow with the request count.
func SimulateWith(ctx context.Context, cfg Config, sys System, opt SimOptions) (*Result, error) {
	if cfg.HTTPOverhead < 0 || cfg.HTTPInbound < 0 || cfg.HTTPInbound > cfg.HTTPOverhead {
		return nil, fmt.Errorf("http path: inbound %v must lie between 0 and the overhead %v", cfg.HTTPInbound, cfg.HTTPOverhead)
	}
	st, src, err := simStream(cfg, opt.Stream)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	v := &virtual{ctx: ctx, cfg: cfg, sys: sys, header: cfg.baseHeader(), route: cfg.Endpoint}
	newPhase := func(name string, reqs []Request) *phase {
		return &phase{cfg: cfg, tok: st.tok, reqs: reqs, limit: cfg.Arrival.MaxConcurrency, name: name, header: v.header}
	}
	res := &Result{}
	warmup := st.Warmup
	if cfg.ReadyCheckTimeout > 0 {
		ready := []Request{st.Ready}
		if len(warmup) > 0 {
			ready, warmup = warmup[:1], warmup[1:]
		}
		p := newPhase(phaseWarmup, ready)
		if err := v.run(p, &sliceSource{reqs: ready}, nil); err != nil {
			return nil, fmt.Errorf("ready check: %w", err)
		}
		if !v.recs.all[0].Success {
			return nil, fmt.Errorf("ready check: %s", v.recs.all[0].Error)
		}
		res.Warmup.Sent = 1
	}
	if len(warmup) > 0 {
		w := newPhase(phaseWarmup, warmup)
		if err := v.run(w, &sliceSource{reqs: warmup}, nil); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		for _, r := range v.recs.all {
			res.Warmup.Sent++
			if !r.Success {
				res.WarmupFailed++
				if res.Warmup.ErrorTypes == nil {
					res.Warmup.ErrorTypes = map[string]int{}
				}
				res.Warmup.ErrorTypes[r.ErrorType]++
			}
		}
	}
	res.Warmup.Failed = res.WarmupFailed
	m := newPhase(phaseMeasured, nil)
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
	if err := v.run(m, src, acc); err != nil {
		return nil, err
	}
	var s metrics.Summary
	params.Duration = v.end - v.base
	if acc != nil {
		acc.SetDuration(params.Duration)
		s = acc.Summary()
	} else {
		res.Requests = v.recs.all
		s = metrics.Summarize(v.recs.all, params)
	}
	cfg.describe(&s, st, src.Len(), started)
	if s.StreamHash, err = src.Hash(); err != nil {
		return nil, err
	}
	s.SentHash = v.hash.sum()
	res.Summary = s
	return res, ctx.Err()
}

// simStream is the run's stream: produced lazily when streaming a workload
// whose items depend on their index alone (random), else whole (Generate).
func simStream(cfg Config, stream bool) (*Stream, reqSource, error) {
	if stream {
		st, src, ok, err := lazyStream(cfg)
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

// virtual runs phases one after another on one virtual clock.
type virtual struct {
	ctx     context.Context
	cfg     Config
	sys     System
	header  http.Header
	route   string
	now     time.Duration // the clock
	base    time.Duration // the current phase's start
	end     time.Duration // when the current phase's last request ended
	sent    map[int]time.Duration
	src     reqSource // the current phase's requests
	recs    *records
	hash    *sentDigest
	transit transits // sent, not arrived yet (HTTPInbound)
	back    answers  // answered, not at the client yet (HTTPOverhead − HTTPInbound)
}

// run sends every request of p, in virtual time from the current instant,
// and returns once all have finished (or p's max duration passed). With
// acc, records are counted into it as they end instead of kept.
func (v *virtual) run(p *phase, src reqSource, acc *metrics.Accumulator) error {
	n := src.Len()
	v.src, v.recs, v.hash, v.transit, v.back = src, newRecords(src, acc), newSentDigest(), nil, nil
	p.next = map[int]int{}
	v.base, v.end, v.sent = v.now, v.now, map[int]time.Duration{}
	q := &queue{}
	// pull queues the source's next request; a lazy source's requests
	// start no sessions and come in offset order, so one queued ahead is
	// the earliest due.
	pull := func() error {
		i, ok, err := src.Next()
		if !ok || err != nil {
			return err
		}
		if r := src.At(i); r.Prev < 0 {
			heap.Push(q, pending{index: i, intended: r.Offset})
		} else {
			p.next[r.Prev] = i
		}
		return nil
	}
	for range n {
		if err := pull(); err != nil {
			return err
		}
		if src.Lazy() {
			break
		}
	}
	inflight, finished := 0, 0
	var freedAt time.Duration
	// delivered: the client has the answer's last token (or its refusal):
	// its slot frees and its session's next turn is due from now.
	delivered := func(a Answer) {
		if p.limit > 0 && inflight == p.limit {
			freedAt = v.now - v.base
		}
		inflight--
		finished += 1 + v.finish(p, q, a)
	}
	// done: the system answered now; the answer reaches the client the
	// path back later.
	out := v.cfg.HTTPOverhead - v.cfg.HTTPInbound
	done := func(a Answer) {
		if out == 0 {
			delivered(a)
			return
		}
		heap.Push(&v.back, answer{at: v.now + out, a: a})
	}
	refused := func(i int) { finished += 1 + v.finish(p, q, Answer{ID: -1 - i}) }
	for finished < n {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		at, ok := v.sys.Next()
		if len(v.transit) > 0 && (!ok || v.transit[0].at < at) {
			at, ok = v.transit[0].at, true
		}
		if len(v.back) > 0 && (!ok || v.back[0].at < at) {
			at, ok = v.back[0].at, true
		}
		if q.Len() > 0 && (p.limit == 0 || inflight < p.limit) {
			due := max(v.base+(*q)[0].intended, v.now)
			if !ok || due < at {
				at, ok = due, true
			}
		}
		if !ok {
			return fmt.Errorf("virtual clock: %d of %d requests never finished and nothing is left to happen", n-finished, n)
		}
		if p.maxDuration > 0 && at > v.base+p.maxDuration {
			return v.stop(p, q)
		}
		v.now = at
		if err := v.sys.Complete(at, done); err != nil {
			return err
		}
		for len(v.back) > 0 && v.back[0].at <= at {
			delivered(heap.Pop(&v.back).(answer).a)
		}
		for len(v.transit) > 0 && v.transit[0].at <= at {
			x := heap.Pop(&v.transit).(inTransit)
			if !v.arrive(x) {
				done(Answer{ID: -1 - x.index}) // it held a concurrency slot
			}
		}
		for q.Len() > 0 && (p.limit == 0 || inflight < p.limit) && v.base+(*q)[0].intended <= at {
			it := heap.Pop(q).(pending)
			if src.Lazy() {
				if err := pull(); err != nil {
					return err
				}
			}
			if v.send(p, it, freedAt) {
				inflight++
			} else {
				refused(it.index)
			}
		}
		v.sys.Plan()
	}
	return nil
}

// send sends request it: it reaches the system at once, or HTTPInbound
// later; false when the system refused it at once (its record says why).
func (v *virtual) send(p *phase, it pending, freedAt time.Duration) bool {
	i := it.index
	rec := v.recs.at(i)
	rec.IntendedMs, rec.DueMs = ms(it.intended), ms(max(it.intended, freedAt))
	rec.SendMs, rec.Sent = ms(v.now-v.base), true
	rec.ScheduleDelayMs = rec.SendMs - rec.DueMs
	req := v.src.At(i)
	v.hash.add(i, req.Session, req.Body)
	v.recs.sentAt(i, rec.SendMs)
	v.sent[i] = v.now
	x := inTransit{at: v.now + v.cfg.HTTPInbound, index: i, header: p.headerFor(i, req.Session), body: req.Body}
	if v.cfg.HTTPInbound > 0 {
		heap.Push(&v.transit, x)
		return true
	}
	return v.arrive(x)
}

// arrive hands request x to the system now; false when the system refused
// it (its record says why).
func (v *virtual) arrive(x inTransit) bool {
	if err := v.sys.Send(x.index, v.route, x.header, x.body, v.now); err != nil {
		r := v.recs.at(x.index)
		r.ErrorType, r.Error = "rejected", err.Error()
		return false
	}
	return true
}

// finish records answer a (ID < 0: request −ID−1 was refused) and queues
// its session's next turn, like phase.finish.
func (v *virtual) finish(p *phase, q *queue, a Answer) int {
	i := a.ID
	if i < 0 {
		i = -1 - i
	} else {
		v.measure(v.recs.at(i), a)
	}
	v.end = max(v.end, v.now)
	now := ms(v.now - v.base)
	success := v.recs.at(i).Success
	v.recs.done(i, now)
	nxt, ok := p.next[i]
	if !ok {
		return 0
	}
	if success {
		heap.Push(q, pending{index: nxt, intended: v.now - v.base + v.src.At(nxt).Think})
		return 0
	}
	aborted := 0
	for j, ok := nxt, true; ok; j, ok = p.next[j] {
		r := v.recs.at(j)
		r.ErrorType, r.Error = errSessionAborted, "an earlier turn of the session failed"
		v.recs.done(j, now)
		aborted++
	}
	return aborted
}

// measure fills rec from an answer the way phase.measure reads a streamed
// HTTP exchange: one event per token, each delivered HTTPOverhead −
// HTTPInbound after the engine emitted it (the request reached the engine
// HTTPInbound after its send, so TTFT and E2E hold the whole overhead).
func (v *virtual) measure(rec *metrics.RequestRecord, a Answer) {
	send := v.sent[rec.Index]
	delete(v.sent, rec.Index)
	if len(a.Tokens) == 0 {
		rec.ErrorType, rec.Error = errStream, "the engine finished without a token"
		return
	}
	rec.Success, rec.Status = true, http.StatusOK
	pt, ct := a.PromptTokens, a.CachedTokens
	rec.PromptTokens, rec.CachedTokens = &pt, &ct
	// The path back delays every token's delivery alike: TTFT and E2E grow
	// by it, the gaps between tokens do not.
	out := v.cfg.HTTPOverhead - v.cfg.HTTPInbound
	rec.TTFTMs = ms(a.Tokens[0] - send + out)
	rec.E2ELMs = ms(a.Tokens[len(a.Tokens)-1] - send + out)
	rec.ITLMs = make([]float64, len(a.Tokens)-1)
	for k := range rec.ITLMs {
		rec.ITLMs[k] = ms(a.Tokens[k+1] - a.Tokens[k])
	}
	rec.OutputTokens = len(a.Tokens)
	if rec.OutputTokens > 1 {
		rec.TPOTMs = (rec.E2ELMs - rec.TTFTMs) / float64(rec.OutputTokens-1)
	}
}

// stop ends a phase at its max duration: requests in flight are
// incomplete, those not sent not_sent, as phase.stop marks them.
func (v *virtual) stop(p *phase, q *queue) error {
	mark := func(i int) {
		r := v.recs.at(i)
		r.ErrorType, r.Error = ErrNotSent, "the run stopped before this request was sent"
	}
	for q.Len() > 0 {
		it := heap.Pop(q).(pending)
		mark(it.index)
		for i, ok := p.next[it.index]; ok; i, ok = p.next[i] {
			mark(i)
		}
	}
	end := ms(p.maxDuration)
	err := v.recs.each(func(i int, r *metrics.RequestRecord) {
		switch {
		case r.Sent && !r.Success && r.ErrorType == "":
			r.ErrorType, r.Error = ErrIncomplete, "in flight when the run stopped"
		case !r.Sent && r.ErrorType == "":
			r.ErrorType = ErrNotSent
		}
		v.recs.done(i, end)
	})
	v.end = v.base + p.maxDuration
	return err
}
