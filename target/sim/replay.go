package sim

import (
	"container/heap"
	"errors"
	"fmt"
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
// model on a virtual clock: a one-worker Fleet, the event loop trials run
// on, driven by the trace. One goroutine, no HTTP, no timers, no sleeping.
// Each step ends exactly at its modelled time, so the result is what a live
// engine on an unloaded host would produce, in milliseconds of CPU time.
// Requests go to the data-parallel ranks round-robin, as over HTTP. Roles and
// faults do not apply (PD transfers need two engines and a link).
func Replay(opts Options, trace []TraceRequest) (*ReplayReport, error) {
	r, err := replayOn(opts, trace, true)
	if err != nil {
		return nil, err
	}
	return r.report()
}

// replayOn replays trace on a new one-worker fleet whose engines keep the
// served metrics, or (metrics false) a trial's window counters.
func replayOn(opts Options, trace []TraceRequest, metrics bool) (*replay, error) {
	opts.Faults = Faults{}
	r := &replay{trace: trace, results: make([]traced, len(trace)), children: map[int][]int{}}
	f, err := newFleet([]Options{opts}, r, metrics)
	if err != nil {
		return nil, err
	}
	if err := validTrace(trace, f.servers[0].cfg.maxModelLen); err != nil {
		return nil, err
	}
	r.f = f
	for i, tr := range trace {
		if tr.After == 0 {
			heap.Push(&r.due, event{fleetBase.Add(tr.At), i})
		} else {
			r.children[tr.After-1] = append(r.children[tr.After-1], i)
		}
	}
	for {
		at, ok := f.Next()
		if len(r.due) > 0 && (!ok || r.due[0].at.Sub(fleetBase) < at) {
			at, ok = r.due[0].at.Sub(fleetBase), true
		}
		if !ok {
			break
		}
		// Step ends first (their finishes make followers due), then the
		// arrivals, then the idle ranks plan: the fleet's instant order.
		if err := f.Complete(at); err != nil {
			return nil, err
		}
		for len(r.due) > 0 && r.due[0].at.Sub(fleetBase) == at {
			if err := r.submit(heap.Pop(&r.due).(event).key, at); err != nil {
				return nil, err
			}
		}
		f.Plan()
	}
	return r, nil
}

// validTrace checks every request of trace against the engine's context.
func validTrace(trace []TraceRequest, maxModelLen int) error {
	var errs []error
	for i, r := range trace {
		switch {
		case len(r.Prompt) == 0:
			errs = append(errs, fmt.Errorf("trace[%d].prompt: must not be empty", i))
		case r.MaxTokens < 1:
			errs = append(errs, fmt.Errorf("trace[%d].max_tokens: must be >= 1, got %d", i, r.MaxTokens))
		case len(r.Prompt)+r.MaxTokens > maxModelLen:
			errs = append(errs, fmt.Errorf("trace[%d]: prompt %d + max_tokens %d exceed max_model_len %d", i, len(r.Prompt), r.MaxTokens, maxModelLen))
		case r.At < 0:
			errs = append(errs, fmt.Errorf("trace[%d].at: must be >= 0, got %v", i, r.At))
		case r.After < 0 || r.After > len(trace) || r.After == i+1:
			errs = append(errs, fmt.Errorf("trace[%d].after: must name another request (1..%d) or be 0, got %d", i, len(trace), r.After))
		}
	}
	return errors.Join(errs...)
}

// replay is Replay's driver of the fleet: the arrivals still to come and
// what each request did, as the fleet reports it.
type replay struct {
	f        *Fleet
	trace    []TraceRequest
	results  []traced
	due      events        // requests whose arrival time is known, keyed by trace index
	children map[int][]int // requests that follow request i
	next     int           // round-robin rank counter
}

// traced is one trace request as the fleet reported it.
type traced struct {
	TraceResult
	arrived, finished bool
}

// submit hands trace request i to the next rank round-robin at at.
func (r *replay) submit(i int, at time.Duration) error {
	tr := r.trace[i]
	req := &genRequest{prompt: tr.Prompt, maxTokens: tr.MaxTokens, ignoreEOS: tr.IgnoreEOS, logprobs: -1}
	rank := r.next % r.f.Ranks(0)
	r.next++
	r.results[i].arrived, r.results[i].Arrival = true, at
	return r.f.submitSeq(0, rank, i, fmt.Sprintf("trace-%d", i), req, at)
}

// Token records request tag's token.
func (r *replay) Token(tag int, at time.Duration) {
	r.results[tag].TokenTimes = append(r.results[tag].TokenTimes, at)
}

// Finished records request tag's end and makes its followers due.
func (r *replay) Finished(tag int, f FleetFinish) {
	res := &r.results[tag]
	res.finished, res.FinishReason, res.CachedTokens = true, f.Reason, f.CachedTokens
	for _, c := range r.children[tag] {
		heap.Push(&r.due, event{fleetBase.Add(max(r.trace[c].At, f.At)), c})
	}
}

func (r *replay) report() (*ReplayReport, error) {
	steps, busy := r.f.Steps()
	rep := &ReplayReport{Steps: steps, Busy: busy, End: r.f.Now(), Metrics: r.f.servers[0].m.reg}
	for i, res := range r.results {
		if !res.arrived {
			return nil, fmt.Errorf("trace[%d]: never arrived: it follows a request that never finished", i)
		}
		if !res.finished {
			return nil, fmt.Errorf("trace[%d]: never finished (%d of at most %d tokens): the engine could not schedule it", i, len(res.TokenTimes), r.trace[i].MaxTokens)
		}
		rep.Requests = append(rep.Requests, res.TraceResult)
	}
	return rep, nil
}
