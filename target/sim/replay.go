package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// After, when > 0, makes the request arrive only once request After−1 of
	// the trace has finished (and not before At): a closed-loop client.
	After int
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
	// Metrics is the engine's registry after the run (what /metrics
	// would have served).
	Metrics prometheus.Gatherer
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
	seqs := make([]*seq, len(trace))
	var errs []error
	for i, r := range trace {
		switch {
		case len(r.Prompt) == 0:
			errs = append(errs, fmt.Errorf("trace[%d].prompt: must not be empty", i))
		case r.MaxTokens < 1:
			errs = append(errs, fmt.Errorf("trace[%d].max_tokens: must be >= 1, got %d", i, r.MaxTokens))
		case len(r.Prompt)+r.MaxTokens > s.cfg.maxModelLen:
			errs = append(errs, fmt.Errorf("trace[%d]: prompt %d + max_tokens %d exceed max_model_len %d", i, len(r.Prompt), r.MaxTokens, s.cfg.maxModelLen))
		case r.At < 0:
			errs = append(errs, fmt.Errorf("trace[%d].at: must be >= 0, got %v", i, r.At))
		case r.After < 0 || r.After > len(trace) || r.After == i+1:
			errs = append(errs, fmt.Errorf("trace[%d].after: must name another request (1..%d) or be 0, got %d", i, len(trace), r.After))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	v := &virtualRun{s: s, base: time.Unix(0, 0).UTC(), busy: make([]bool, len(s.ranks)), end: make([]time.Time, len(s.ranks)),
		trace: trace, seqs: seqs, children: map[int][]int{}}
	for i, r := range trace {
		if r.After == 0 {
			heap.Push(&v.due, arrival{r.At, i})
		} else {
			v.children[r.After-1] = append(v.children[r.After-1], i)
		}
	}
	for {
		now, ok := v.nextEvent()
		if !ok {
			break
		}
		v.completeDue(now)
		v.arrive(now)
		v.planIdle(now)
	}
	rep := &ReplayReport{Steps: v.steps, Busy: v.busyTime, End: v.last.Sub(v.base), Metrics: s.m.reg}
	for i, sq := range seqs {
		if sq == nil {
			return nil, fmt.Errorf("trace[%d]: never arrived: it follows a request that never finished", i)
		}
		if !sq.finished {
			return nil, fmt.Errorf("trace[%d]: never finished (%d of %d tokens): the engine could not schedule it", i, len(sq.times), sq.target)
		}
		r := TraceResult{Arrival: sq.arrival.Sub(v.base), FinishReason: sq.finishReason, CachedTokens: int(sq.cachedTokens.Load())}
		r.TokenTimes = make([]time.Duration, len(sq.times))
		for k, t := range sq.times {
			r.TokenTimes[k] = t.Sub(v.base)
		}
		rep.Requests = append(rep.Requests, r)
	}
	return rep, nil
}

// virtualRun is Replay's event loop state: per rank whether a step runs and
// when it ends, and the arrivals still to come.
type virtualRun struct {
	s        *Server
	trace    []TraceRequest
	seqs     []*seq
	due      arrivals      // requests whose arrival time is known
	children map[int][]int // requests that follow request i
	parents  []int         // submitted requests others follow, not yet finished
	next     int           // round-robin rank counter
	base     time.Time
	busy     []bool
	end      []time.Time
	steps    int
	busyTime time.Duration
	last     time.Time
}

func (v *virtualRun) at(d time.Duration) time.Time { return v.base.Add(d) }

// nextEvent is the earliest pending arrival or step end.
func (v *virtualRun) nextEvent() (time.Time, bool) {
	best, ok := time.Time{}, false
	if len(v.due) > 0 {
		best, ok = v.at(v.due[0].at), true
	}
	for r, b := range v.busy {
		if b && (!ok || v.end[r].Before(best)) {
			best, ok = v.end[r], true
		}
	}
	return best, ok
}

// arrive submits every request due at now, in trace order.
func (v *virtualRun) arrive(now time.Time) {
	for len(v.due) > 0 && v.at(v.due[0].at).Equal(now) {
		i := heap.Pop(&v.due).(arrival).i
		v.seqs[i] = v.submit(v.trace[i], fmt.Sprintf("trace-%d", i), now)
		if len(v.children[i]) > 0 {
			v.parents = append(v.parents, i)
		}
	}
}

// completeDue applies every step that ends at now, then schedules the
// requests that follow one that finished.
func (v *virtualRun) completeDue(now time.Time) {
	for r, e := range v.s.ranks {
		if v.busy[r] && v.end[r].Equal(now) {
			e.mu.Lock()
			e.complete(now)
			e.mu.Unlock()
			v.busy[r] = false
		}
	}
	v.parents = slices.DeleteFunc(v.parents, func(p int) bool {
		if !v.seqs[p].finished {
			return false
		}
		for _, c := range v.children[p] {
			heap.Push(&v.due, arrival{max(v.trace[c].At, now.Sub(v.base)), c})
		}
		return true
	})
}

// submit hands request tr to the next rank round-robin.
func (v *virtualRun) submit(tr TraceRequest, id string, now time.Time) *seq {
	req := &genRequest{prompt: tr.Prompt, maxTokens: tr.MaxTokens, ignoreEOS: tr.IgnoreEOS, logprobs: -1}
	sq := v.s.newSeq(id, req)
	sq.arrival, sq.record = now, true
	v.s.ranks[v.next%len(v.s.ranks)].submit(sq)
	v.next++
	return sq
}

// arrival is a request due at a known time; arrivals order by time, then
// trace index.
type arrival struct {
	at time.Duration
	i  int
}

type arrivals []arrival

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	return a[i].at < a[j].at || (a[i].at == a[j].at && a[i].i < a[j].i)
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
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
