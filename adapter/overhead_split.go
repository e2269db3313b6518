package adapter

import (
	"strconv"
	"sync"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
)

// overheadIDPrefix names the measured requests of `sim overhead`'s runs
// (X-Request-Id) when the workload names them no other way, so the
// engines' timings can be matched with the driver's records.
const overheadIDPrefix = "overhead-"

// requestObserver is a worker whose engine reports each answered request's
// timings, and each step's planned end and completion, on this process's
// clock (the sim target's in-process engines).
type requestObserver interface {
	ObserveRequests(fn func(sim.RequestTiming))
	ObserveSteps(fn func(sim.StepTiming))
}

// splitProbe collects the engines' request timings during one real-time
// run, keyed by request id, and the driver's result, to split each
// request's TTFT into the path to the engine, the engine's time and the
// path back.
type splitProbe struct {
	mu       sync.Mutex
	timings  map[string][]sim.RequestTiming // by X-Request-Id; one per leg
	steps    []sim.StepTiming               // every engine step, all workers
	observed int                            // workers reporting timings
	result   *driver.Result
}

func newSplitProbe() *splitProbe { return &splitProbe{timings: map[string][]sim.RequestTiming{}} }

// attach asks every worker of dep that can to report its timings.
func (p *splitProbe) attach(dep *target.Deployment) {
	for i := range dep.Workers {
		if o, ok := dep.Member(i).(requestObserver); ok {
			o.ObserveRequests(p.add)
			o.ObserveSteps(p.step)
			p.observed++
		}
	}
}

func (p *splitProbe) add(rt sim.RequestTiming) {
	p.mu.Lock()
	p.timings[rt.ID] = append(p.timings[rt.ID], rt)
	p.mu.Unlock()
}

func (p *splitProbe) step(st sim.StepTiming) {
	p.mu.Lock()
	p.steps = append(p.steps, st)
	p.mu.Unlock()
}

// stepDelays are, for the engine steps completed in the measured phase
// (from its start to the last measured answer; warm-up and the drain after
// it are left out), their lags (completion − planned end, 0 when on time;
// only steps that waited for their end: one planned with its end already
// past is the catch-up after a late step, which completes at once and
// whose distance from its end is that step's lateness, counted there)
// and, for those planned right after an idle loop was woken by a submit,
// how long after the submit the loop planned them (plans) and how late
// they completed beyond the submit plus their modelled time (wakes).
func (p *splitProbe) stepDelays() (lags, plans, wakes []time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.result == nil {
		return nil, nil, nil
	}
	start := p.result.Start
	end := start
	for _, r := range p.result.Requests {
		if t := start.Add(msDuration(r.SendMs + r.E2ELMs)); t.After(end) {
			end = t
		}
	}
	for _, st := range p.steps {
		if st.Done.Before(start) || st.Done.After(end) {
			continue
		}
		if st.End.After(st.Planned) {
			lags = append(lags, max(0, st.Done.Sub(st.End)))
		}
		if plan, late, ok := st.Wake(); ok {
			plans, wakes = append(plans, max(0, plan)), append(wakes, max(0, late))
		}
	}
	return lags, plans, wakes
}

// done keeps the driver's result, whose records the timings match.
func (p *splitProbe) done(res *driver.Result) {
	p.mu.Lock()
	p.result = res
	p.mu.Unlock()
}

// requestSplit is one request's TTFT in three parts, on one clock.
type requestSplit struct {
	index int
	// inbound: client send → the first leg queued at its engine (client,
	// router, engine HTTP front end and parsing).
	inbound time.Duration
	// engine: queued → first token emitted (queueing, steps, a PD
	// transfer).
	engine time.Duration
	// outbound: first token emitted → its arrival at the client (SSE
	// framing, the router's proxying, the client's read).
	outbound time.Duration
}

// splits matches the measured records with the engines' timings: the
// request's first leg (the prefill leg under PD) for the arrival, its
// serving leg for the first token. Records without timings (failed, or a
// worker that reports none) are left out.
func (p *splitProbe) splits(prefix string) []requestSplit {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.result == nil {
		return nil
	}
	var out []requestSplit
	for _, r := range p.result.Requests {
		legs := p.timings[prefix+strconv.Itoa(r.Index)]
		if !r.Success || len(legs) == 0 {
			continue
		}
		queued, serving := legs[0].Queued, -1
		for k, l := range legs {
			if l.Queued.Before(queued) {
				queued = l.Queued
			}
			if l.Role != sim.RolePrefill {
				serving = k
			}
		}
		if serving < 0 {
			continue
		}
		send := p.result.Start.Add(msDuration(r.SendMs))
		first := send.Add(msDuration(r.TTFTMs))
		out = append(out, requestSplit{index: r.Index, inbound: queued.Sub(send),
			engine: legs[serving].First.Sub(queued), outbound: first.Sub(legs[serving].First)})
	}
	return out
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// msDuration converts a record's milliseconds back to a duration.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
