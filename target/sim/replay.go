package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TraceRequest is one request of a trace replayed on the virtual clock.
type TraceRequest struct {
	// At is the arrival time, from the start of the trace.
	At time.Duration
	// Prompt is the prompt's token ids.
	Prompt []int
	// MaxTokens caps the output; with IgnoreEOS the request generates
	// exactly MaxTokens, otherwise it may stop earlier on its own (as over
	// HTTP at temperature 0).
	MaxTokens int
	IgnoreEOS bool
}

// TraceResult is what the engine did with one TraceRequest; times are from
// the start of the trace.
type TraceResult struct {
	Arrival      time.Duration
	TokenTimes   []time.Duration // emission time of each output token
	FinishReason string
	CachedTokens int
}

// TTFT is the time from arrival to the first token.
func (r TraceResult) TTFT() time.Duration { return r.TokenTimes[0] - r.Arrival }

// E2E is the time from arrival to the last token.
func (r TraceResult) E2E() time.Duration { return r.TokenTimes[len(r.TokenTimes)-1] - r.Arrival }

// ReplayReport is the outcome of Replay.
type ReplayReport struct {
	Requests []TraceResult // in trace order
	Steps    int           // engine steps, all ranks
	Busy     time.Duration // modelled step time, all ranks
	End      time.Duration // when the last step ended
}

// Replay runs trace through the engine's real scheduler, KV cache and step
// model on a virtual clock: one goroutine, no HTTP, no timers, no sleeping.
// Each step ends exactly at its modelled time, so the result is what a live
// engine on an unloaded host would produce, in milliseconds of CPU time.
// Requests go to the data-parallel ranks round-robin, as over HTTP. Roles and
// faults do not apply (PD transfers need two engines and a link).
func Replay(opts Options, trace []TraceRequest) (*ReplayReport, error) {
	opts.Faults = Faults{}
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(trace))
	seqs := make([]*seq, len(trace))
	var errs []error
	for i, r := range trace {
		order[i] = i
		switch {
		case len(r.Prompt) == 0:
			errs = append(errs, fmt.Errorf("trace[%d].prompt: must not be empty", i))
		case r.MaxTokens < 1:
			errs = append(errs, fmt.Errorf("trace[%d].max_tokens: must be >= 1, got %d", i, r.MaxTokens))
		case len(r.Prompt)+r.MaxTokens > s.cfg.maxModelLen:
			errs = append(errs, fmt.Errorf("trace[%d]: prompt %d + max_tokens %d exceed max_model_len %d", i, len(r.Prompt), r.MaxTokens, s.cfg.maxModelLen))
		case r.At < 0:
			errs = append(errs, fmt.Errorf("trace[%d].at: must be >= 0, got %v", i, r.At))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(trace[a].At, trace[b].At) })
	v := &virtualRun{s: s, base: time.Unix(0, 0).UTC(), busy: make([]bool, len(s.ranks)), end: make([]time.Time, len(s.ranks))}
	next := 0
	for {
		now, ok := v.nextEvent(trace, order, next)
		if !ok {
			break
		}
		v.completeDue(now)
		for ; next < len(order) && v.at(trace[order[next]].At).Equal(now); next++ {
			i := order[next]
			seqs[i] = v.submit(trace[i], fmt.Sprintf("trace-%d", i), now, next)
		}
		v.planIdle(now)
	}
	rep := &ReplayReport{Steps: v.steps, Busy: v.busyTime, End: v.last.Sub(v.base)}
	for i, sq := range seqs {
		if !sq.finished {
			return nil, fmt.Errorf("trace[%d]: never finished (%d of %d tokens): the engine could not schedule it", i, len(sq.times), sq.target)
		}
		r := TraceResult{Arrival: trace[i].At, FinishReason: sq.finishReason, CachedTokens: int(sq.cachedTokens.Load())}
		r.TokenTimes = make([]time.Duration, len(sq.times))
		for k, t := range sq.times {
			r.TokenTimes[k] = t.Sub(v.base)
		}
		rep.Requests = append(rep.Requests, r)
	}
	return rep, nil
}

// virtualRun is Replay's event loop state: per rank whether a step runs and
// when it ends.
type virtualRun struct {
	s        *Server
	base     time.Time
	busy     []bool
	end      []time.Time
	steps    int
	busyTime time.Duration
	last     time.Time
}

func (v *virtualRun) at(d time.Duration) time.Time { return v.base.Add(d) }

// nextEvent is the earliest pending arrival or step end.
func (v *virtualRun) nextEvent(trace []TraceRequest, order []int, next int) (time.Time, bool) {
	best, ok := time.Time{}, false
	if next < len(order) {
		best, ok = v.at(trace[order[next]].At), true
	}
	for r, b := range v.busy {
		if b && (!ok || v.end[r].Before(best)) {
			best, ok = v.end[r], true
		}
	}
	return best, ok
}

// completeDue applies every step that ends at now.
func (v *virtualRun) completeDue(now time.Time) {
	for r, e := range v.s.ranks {
		if v.busy[r] && v.end[r].Equal(now) {
			e.mu.Lock()
			e.complete(now)
			e.mu.Unlock()
			v.busy[r] = false
		}
	}
}

// submit hands request tr to the next rank round-robin.
func (v *virtualRun) submit(tr TraceRequest, id string, now time.Time, n int) *seq {
	req := &genRequest{prompt: tr.Prompt, maxTokens: tr.MaxTokens, ignoreEOS: tr.IgnoreEOS, logprobs: -1}
	sq := v.s.newSeq(id, req)
	sq.arrival, sq.record = now, true
	v.s.ranks[n%len(v.s.ranks)].submit(sq)
	return sq
}

// planIdle starts a step on every idle rank that has work.
func (v *virtualRun) planIdle(now time.Time) {
	for r, e := range v.s.ranks {
		if v.busy[r] {
			continue
		}
		e.mu.Lock()
		dur := e.plan(now)
		work := len(e.items) > 0
		e.mu.Unlock()
		if work {
			v.busy[r], v.end[r] = true, now.Add(dur)
			v.steps++
			v.busyTime += dur
			if v.end[r].After(v.last) {
				v.last = v.end[r]
			}
		}
	}
}
