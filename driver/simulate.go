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
// request due, then Plan, so equal-time order is fixed.
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
	st, err := Generate(cfg)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, r := range st.Requests {
		if r.Body == nil {
			return nil, errors.New("workload: multi_turn with actual history needs the server's answer text, which the virtual clock does not simulate")
		}
	}
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
		if err := v.run(p); err != nil {
			return nil, fmt.Errorf("ready check: %w", err)
		}
		if !p.records[0].Success {
			return nil, fmt.Errorf("ready check: %s", p.records[0].Error)
		}
		res.Warmup.Sent = 1
	}
	if len(warmup) > 0 {
		w := newPhase(phaseWarmup, warmup)
		if err := v.run(w); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		for _, r := range w.records {
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
	m := newPhase(phaseMeasured, st.Requests)
	m.maxDuration = time.Duration(cfg.Workload.MaxSeconds * float64(time.Second))
	started := time.Now()
	if err := v.run(m); err != nil {
		return nil, err
	}
	res.Requests = m.records
	s := metrics.Summarize(m.records, metrics.Params{Duration: v.end - v.base, Goodput: cfg.Goodput, Percentiles: cfg.Percentiles})
	s.Date = started.Format("20060102-150405")
	s.EndpointType, s.Backend, s.Label = cfg.Backend, cfg.Backend, cfg.Label
	s.ModelID, s.TokenizerID = cfg.Model, st.TokenizerID()
	s.NumPrompts = len(st.Requests)
	s.RequestRate = metrics.Rate(cfg.Arrival.RequestRate)
	s.Burstiness = cfg.Arrival.Burstiness
	if c := cfg.Arrival.MaxConcurrency; c > 0 {
		s.MaxConcurrency = &c
	}
	s.TrialID, s.RunID, s.Seed = cfg.TrialID, cfg.RunID, cfg.Seed
	s.WarmupRequests = len(st.Warmup)
	s.StreamHash = st.Hash()
	s.SentHash = m.sent.sum()
	res.Summary = s
	return res, ctx.Err()
}

// virtual runs phases one after another on one virtual clock.
type virtual struct {
	ctx    context.Context
	cfg    Config
	sys    System
	header http.Header
	route  string
	now    time.Duration // the clock
	base   time.Duration // the current phase's start
	end    time.Duration // when the current phase's last request ended
	sent   map[int]time.Duration
}

// run sends every request of p, in virtual time from the current instant,
// and returns once all have finished (or p's max duration passed).
func (v *virtual) run(p *phase) error {
	n := len(p.reqs)
	p.records = make([]metrics.RequestRecord, n)
	p.sent = newSentDigest()
	p.next = map[int]int{}
	v.base, v.end, v.sent = v.now, v.now, map[int]time.Duration{}
	q := &queue{}
	for i, r := range p.reqs {
		p.records[i] = metrics.RequestRecord{Index: i, SessionID: r.Session, Turn: r.Turn, InputTokens: r.InputTokens}
		if r.Prev < 0 {
			heap.Push(q, pending{index: i, intended: r.Offset})
		} else {
			p.next[r.Prev] = i
		}
	}
	inflight, finished := 0, 0
	var freedAt time.Duration
	done := func(a Answer) {
		if p.limit > 0 && inflight == p.limit {
			freedAt = v.now - v.base
		}
		inflight--
		finished += 1 + v.finish(p, q, a)
	}
	for finished < n {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		at, ok := v.sys.Next()
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
			v.stop(p, q)
			return nil
		}
		v.now = at
		if err := v.sys.Complete(at, done); err != nil {
			return err
		}
		for q.Len() > 0 && (p.limit == 0 || inflight < p.limit) && v.base+(*q)[0].intended <= at {
			it := heap.Pop(q).(pending)
			if v.send(p, it, freedAt) {
				inflight++
			} else {
				finished += 1 + v.finish(p, q, Answer{ID: -1 - it.index})
			}
		}
		v.sys.Plan()
	}
	return nil
}

// send hands request it to the system; false when the system refused it
// (its record says why).
func (v *virtual) send(p *phase, it pending, freedAt time.Duration) bool {
	i := it.index
	rec := &p.records[i]
	rec.IntendedMs, rec.DueMs = ms(it.intended), ms(max(it.intended, freedAt))
	rec.SendMs, rec.Sent = ms(v.now-v.base), true
	rec.ScheduleDelayMs = rec.SendMs - rec.DueMs
	p.sent.add(i, p.reqs[i].Session, p.reqs[i].Body)
	v.sent[i] = v.now
	if err := v.sys.Send(i, v.route, p.requestHeader(i), p.reqs[i].Body, v.now); err != nil {
		rec.ErrorType, rec.Error = "rejected", err.Error()
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
		v.measure(&p.records[i], a)
	}
	v.end = max(v.end, v.now)
	rec := &p.records[i]
	nxt, ok := p.next[i]
	if !ok {
		return 0
	}
	if rec.Success {
		heap.Push(q, pending{index: nxt, intended: v.now - v.base + p.reqs[nxt].Think})
		return 0
	}
	aborted := 0
	for j, ok := nxt, true; ok; j, ok = p.next[j] {
		r := &p.records[j]
		r.ErrorType, r.Error = errSessionAborted, "an earlier turn of the session failed"
		aborted++
	}
	return aborted
}

// measure fills rec from an answer the way phase.measure reads a streamed
// HTTP exchange: one event per token.
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
	rec.TTFTMs = ms(a.Tokens[0] - send)
	rec.E2ELMs = ms(a.Tokens[len(a.Tokens)-1] - send)
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
func (v *virtual) stop(p *phase, q *queue) {
	p.abandon(q)
	for i := range p.records {
		r := &p.records[i]
		switch {
		case r.Sent && !r.Success && r.ErrorType == "":
			r.ErrorType, r.Error = ErrIncomplete, "in flight when the run stopped"
		case !r.Sent && r.ErrorType == "":
			r.ErrorType = ErrNotSent
		}
	}
	v.end = v.base + p.maxDuration
}
