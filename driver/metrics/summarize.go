package metrics

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// SLO bounds for goodput in milliseconds; 0 leaves a metric unbounded.
type SLO struct {
	TTFTMs float64 `yaml:"ttft_ms,omitempty" json:"ttft_ms,omitempty"`
	TPOTMs float64 `yaml:"tpot_ms,omitempty" json:"tpot_ms,omitempty"`
	E2ELMs float64 `yaml:"e2el_ms,omitempty" json:"e2el_ms,omitempty"`
}

// Set reports whether any bound is given.
func (s SLO) Set() bool { return s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2ELMs > 0 }

// Params are the run-level inputs of Summarize.
type Params struct {
	// Duration is the measured run: its start to the end of the last request.
	Duration time.Duration
	Goodput  SLO
	// Percentiles are reported besides 50, 90 and 99 (which always are).
	Percentiles []float64
	// SchedP99Ms is the p99 goroutine scheduling latency of the client
	// process during the run (SampleSched), for the client-lag flag.
	SchedP99Ms float64
}

// Summarize computes the measured figures of recs: counts, throughputs,
// goodput, peaks, latency distributions, schedule delay and the error
// breakdown. It leaves the identity fields (date, model, seed, …) empty.
func Summarize(recs []RequestRecord, p Params) Summary {
	var s Summary
	var ttfts, tpots, itls, e2els, delays []float64
	good, sent, lastSend, bursts := 0, 0, 0.0, 0
	s.ErrorsByStatus = map[string]int{}
	s.ErrorsByType = map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Sent {
			sent++
			delays = append(delays, r.ScheduleDelayMs)
			lastSend = max(lastSend, r.SendMs)
		}
		switch r.ErrorType {
		case NotSent:
			s.NotSent++
			continue
		case Incomplete:
			s.Incomplete++
			continue
		}
		if !r.Success {
			s.Failed++
			status := "no_response"
			if r.Status != 0 {
				status = strconv.Itoa(r.Status)
			}
			s.ErrorsByStatus[status]++
			s.ErrorsByType[r.ErrorType]++
			continue
		}
		s.Completed++
		s.TotalInputTokens += r.InputTokens
		s.TotalOutputTokens += r.OutputTokens
		ttfts = append(ttfts, r.TTFTMs)
		e2els = append(e2els, r.E2ELMs)
		itls = append(itls, r.ITLMs...)
		bursts += r.BurstITLs
		if r.OutputTokens > 1 {
			tpots = append(tpots, r.TPOTMs)
		}
		if Meets(r, p.Goodput) {
			good++
		}
	}
	if d := p.Duration.Seconds(); d > 0 {
		s.Duration = d
		s.RequestThroughput = float64(s.Completed) / d
		s.OutputThroughput = float64(s.TotalOutputTokens) / d
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / d
		if p.Goodput.Set() {
			g := float64(good) / d
			s.RequestGoodput = &g
		}
	}
	if lastSend > 0 {
		s.AchievedRequestRate = float64(sent) / (lastSend / 1000)
	}
	s.MaxOutputTokensPerS, s.MaxConcurrentRequests = peaks(recs)

	extra := map[string]float64{}
	for _, m := range []struct {
		name                             string
		xs                               []float64
		mean, median, std, p50, p90, p99 *float64
	}{
		{"ttft", ttfts, &s.MeanTTFTMs, &s.MedianTTFTMs, &s.StdTTFTMs, &s.P50TTFTMs, &s.P90TTFTMs, &s.P99TTFTMs},
		{"tpot", tpots, &s.MeanTPOTMs, &s.MedianTPOTMs, &s.StdTPOTMs, &s.P50TPOTMs, &s.P90TPOTMs, &s.P99TPOTMs},
		{"itl", itls, &s.MeanITLMs, &s.MedianITLMs, &s.StdITLMs, &s.P50ITLMs, &s.P90ITLMs, &s.P99ITLMs},
		{"e2el", e2els, &s.MeanE2ELMs, &s.MedianE2ELMs, &s.StdE2ELMs, &s.P50E2ELMs, &s.P90E2ELMs, &s.P99E2ELMs},
	} {
		st := describe(m.xs)
		*m.mean, *m.median, *m.std = st.mean, st.median, st.std
		*m.p50, *m.p90, *m.p99 = st.percentile(50), st.percentile(90), st.percentile(99)
		for _, q := range p.Percentiles {
			if !slices.Contains(fixedPercentiles, q) {
				extra["p"+PercentileWord(q)+"_"+m.name+"_ms"] = st.percentile(q)
			}
		}
	}
	if len(extra) > 0 {
		s.ExtraPercentiles = extra
	}
	if len(itls) > 0 {
		s.ClientBurstITLFraction = float64(bursts) / float64(len(itls))
	}
	s.ClientSchedP99Ms = p.SchedP99Ms
	s.ClientLag = clientLag(s.ClientBurstITLFraction, s.ClientSchedP99Ms, s.MedianITLMs)
	d := describe(delays)
	s.MeanScheduleDelayMs, s.P50ScheduleDelayMs = d.mean, d.percentile(50)
	s.P99ScheduleDelayMs, s.MaxScheduleDelayMs = d.percentile(99), d.sorted[len(d.sorted)-1]
	return s
}

// Meets applies vllm's goodput rule: every given bound holds (≤). A
// request with one output token has TPOT 0 here, as in vllm.
func Meets(r *RequestRecord, slo SLO) bool {
	return (slo.TTFTMs <= 0 || r.TTFTMs <= slo.TTFTMs) &&
		(slo.TPOTMs <= 0 || r.TPOTMs <= slo.TPOTMs) &&
		(slo.E2ELMs <= 0 || r.E2ELMs <= slo.E2ELMs)
}

// peaks computes max_output_tokens_per_s and max_concurrent_requests as
// vllm does: over one-second buckets from the earliest successful send,
// count chunks (the first at send+TTFT, then each ITL later) per bucket, and
// the successful requests active at any point of each bucket.
func peaks(recs []RequestRecord) (float64, int) {
	start, end := math.Inf(1), math.Inf(-1)
	for i := range recs {
		if recs[i].Success {
			start = min(start, recs[i].SendMs)
			end = max(end, recs[i].SendMs+recs[i].E2ELMs)
		}
	}
	if math.IsInf(start, 1) {
		return 0, 0
	}
	n := int(math.Ceil((end-start)/1000)) + 1
	tokens := make([]float64, n)
	active := make([]int, n)
	bucket := func(ms float64) int { return int((ms - start) / 1000) }
	for i := range recs {
		r := &recs[i]
		if !r.Success {
			continue
		}
		t := r.SendMs + r.TTFTMs
		if b := bucket(t); b >= 0 && b < n {
			tokens[b]++
		}
		for _, itl := range r.ITLMs {
			t += itl
			if b := bucket(t); b >= 0 && b < n {
				tokens[b]++
			}
		}
		for b := bucket(r.SendMs); b <= bucket(r.SendMs+r.E2ELMs) && b < n; b++ {
			active[b]++
		}
	}
	return slices.Max(tokens), slices.Max(active)
}
