package metrics

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// PercentileRelError is the relative error of a percentile once a metric
// has more values than an Accumulator keeps exactly: the histogram keeps
// three significant digits.
const PercentileRelError = 1e-3

// Accumulator computes a Summary from records handed to it one at a time,
// so a run need not hold its records. Summarize is an Accumulator that
// keeps every value: its figures are exact. With a limit, each latency
// metric keeps its values exactly up to that many, then moves to a
// histogram of three significant digits (memory flat in the request count;
// the summary's percentile_rel_error says so).
type Accumulator struct {
	p     Params
	limit int

	s                        Summary
	ttft, tpot, itl, e2e, dl sample
	good, sent, bursts       int
	lastSend                 float64

	// Peaks count per one-second bucket from the earliest successful send,
	// which is final only once nothing sent before it can still arrive
	// (Settled); records wait in pending until then.
	start, settled float64
	pending        []peakRec
	tokens         []float64
	active         []int
}

// peakRec is what the peaks need of one successful record.
type peakRec struct {
	send, ttft, e2e float64
	itls            []float64
}

// NewAccumulator starts a summary with p's goodput SLO and percentiles (its
// duration is given to Summary). limit > 0 bounds the values each metric
// keeps exactly; 0 keeps all.
func NewAccumulator(p Params, limit int) *Accumulator {
	a := &Accumulator{p: p, limit: limit, start: math.Inf(1), settled: math.Inf(-1)}
	a.s.ErrorsByStatus = map[string]int{}
	a.s.ErrorsByType = map[string]int{}
	for _, x := range []*sample{&a.ttft, &a.tpot, &a.itl, &a.e2e, &a.dl} {
		x.limit = limit
	}
	return a
}

// Add counts one finished (or never sent) request.
func (a *Accumulator) Add(r *RequestRecord) {
	s := &a.s
	if r.Sent {
		a.sent++
		a.dl.add(r.ScheduleDelayMs)
		a.lastSend = max(a.lastSend, r.SendMs)
	}
	switch r.ErrorType {
	case NotSent:
		s.NotSent++
		return
	case Incomplete:
		s.Incomplete++
		return
	}
	if !r.Success {
		s.Failed++
		status := "no_response"
		if r.Status != 0 {
			status = strconv.Itoa(r.Status)
		}
		s.ErrorsByStatus[status]++
		s.ErrorsByType[r.ErrorType]++
		return
	}
	s.Completed++
	s.TotalInputTokens += r.InputTokens
	s.TotalOutputTokens += r.OutputTokens
	a.ttft.add(r.TTFTMs)
	a.e2e.add(r.E2ELMs)
	for _, x := range r.ITLMs {
		a.itl.add(x)
	}
	a.bursts += r.BurstITLs
	if r.OutputTokens > 1 {
		a.tpot.add(r.TPOTMs)
	}
	if Meets(r, a.p.Goodput) {
		a.good++
	}
	a.start = min(a.start, r.SendMs)
	a.pending = append(a.pending, peakRec{send: r.SendMs, ttft: r.TTFTMs, e2e: r.E2ELMs, itls: r.ITLMs})
	a.flush()
}

// Settled says no record sent before ms (since the run's start) will be
// added any more: once the earliest successful send is before it, the peak
// buckets are fixed and records stream into them.
func (a *Accumulator) Settled(ms float64) {
	a.settled = max(a.settled, ms)
	a.flush()
}

func (a *Accumulator) flush() {
	if a.start > a.settled || len(a.pending) == 0 {
		return
	}
	bucket := func(ms float64) int { return int((ms - a.start) / 1000) }
	grow := func(b int) {
		for len(a.tokens) <= b {
			a.tokens, a.active = append(a.tokens, 0), append(a.active, 0)
		}
	}
	for _, r := range a.pending {
		t := r.send + r.ttft
		if b := bucket(t); b >= 0 {
			grow(b)
			a.tokens[b]++
		}
		for _, itl := range r.itls {
			t += itl
			if b := bucket(t); b >= 0 {
				grow(b)
				a.tokens[b]++
			}
		}
		last := bucket(r.send + r.e2e)
		grow(last)
		for b := bucket(r.send); b <= last; b++ {
			a.active[b]++
		}
	}
	clear(a.pending)
	a.pending = a.pending[:0]
}

// SetDuration sets the measured run's length, known only once it ended.
func (a *Accumulator) SetDuration(d time.Duration) { a.p.Duration = d }

// SetRun sets what is known only once the run ended: its length and the
// client's p99 scheduling latency over it (Params.SchedP99Ms).
func (a *Accumulator) SetRun(d time.Duration, schedP99Ms float64) {
	a.p.Duration, a.p.SchedP99Ms = d, schedP99Ms
}

// Summary is the summary of everything added, over a run of p.Duration
// (as Summarize computes it); it leaves the identity fields empty.
func (a *Accumulator) Summary() Summary {
	a.Settled(math.Inf(1))
	s := a.s
	s.ErrorsByStatus, s.ErrorsByType = cloneMap(a.s.ErrorsByStatus), cloneMap(a.s.ErrorsByType)
	p := a.p
	if d := p.Duration.Seconds(); d > 0 {
		s.Duration = d
		s.RequestThroughput = float64(s.Completed) / d
		s.OutputThroughput = float64(s.TotalOutputTokens) / d
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / d
		if p.Goodput.Set() {
			g := float64(a.good) / d
			s.RequestGoodput = &g
		}
	}
	if a.lastSend > 0 {
		s.AchievedRequestRate = float64(a.sent) / (a.lastSend / 1000)
	}
	if len(a.tokens) > 0 {
		s.MaxOutputTokensPerS, s.MaxConcurrentRequests = slices.Max(a.tokens), slices.Max(a.active)
	}
	extra := map[string]float64{}
	for _, m := range []struct {
		name                             string
		x                                *sample
		mean, median, std, p50, p90, p99 *float64
	}{
		{"ttft", &a.ttft, &s.MeanTTFTMs, &s.MedianTTFTMs, &s.StdTTFTMs, &s.P50TTFTMs, &s.P90TTFTMs, &s.P99TTFTMs},
		{"tpot", &a.tpot, &s.MeanTPOTMs, &s.MedianTPOTMs, &s.StdTPOTMs, &s.P50TPOTMs, &s.P90TPOTMs, &s.P99TPOTMs},
		{"itl", &a.itl, &s.MeanITLMs, &s.MedianITLMs, &s.StdITLMs, &s.P50ITLMs, &s.P90ITLMs, &s.P99ITLMs},
		{"e2el", &a.e2e, &s.MeanE2ELMs, &s.MedianE2ELMs, &s.StdE2ELMs, &s.P50E2ELMs, &s.P90E2ELMs, &s.P99E2ELMs},
	} {
		st := m.x.describe()
		*m.mean, *m.median, *m.std = st.mean, st.median, st.std
		*m.p50, *m.p90, *m.p99 = st.percentile(50), st.percentile(90), st.percentile(99)
		for _, q := range p.Percentiles {
			if !slices.Contains(fixedPercentiles, q) {
				extra["p"+PercentileWord(q)+"_"+m.name+"_ms"] = st.percentile(q)
			}
		}
		if m.x.h != nil {
			s.PercentileRelError = PercentileRelError
		}
	}
	if len(extra) > 0 {
		s.ExtraPercentiles = extra
	}
	if a.itl.n > 0 {
		s.ClientBurstITLFraction = float64(a.bursts) / float64(a.itl.n)
	}
	s.ClientSchedP99Ms = p.SchedP99Ms
	s.ClientLag = clientLag(s.ClientBurstITLFraction, s.ClientSchedP99Ms, s.MedianITLMs)
	d := a.dl.describe()
	s.MeanScheduleDelayMs, s.P50ScheduleDelayMs = d.mean, d.percentile(50)
	s.P99ScheduleDelayMs, s.MaxScheduleDelayMs = d.percentile(99), d.max
	if a.dl.h != nil {
		s.PercentileRelError = PercentileRelError
	}
	return s
}

func cloneMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
