package metrics

import (
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
// breakdown, exactly (an Accumulator that keeps every value, fed in
// record order). It leaves the identity fields (date, model, seed, …) empty.
func Summarize(recs []RequestRecord, p Params) Summary {
	a := NewAccumulator(p, 0)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Summary()
}

// Meets applies vllm's goodput rule: every given bound holds (≤). A
// request with one output token has TPOT 0 here, as in vllm.
func Meets(r *RequestRecord, slo SLO) bool {
	return (slo.TTFTMs <= 0 || r.TTFTMs <= slo.TTFTMs) &&
		(slo.TPOTMs <= 0 || r.TPOTMs <= slo.TPOTMs) &&
		(slo.E2ELMs <= 0 || r.E2ELMs <= slo.E2ELMs)
}
