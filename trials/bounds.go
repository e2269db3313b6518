package trials

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Upper bounds of a spec's counts, sizes, rates and durations. Each is far
// above what a trial needs, and low enough that validation refuses a typo
// (an extra three zeros) or a hostile spec before anything is allocated for
// it; whether a valid spec fits this machine is trial run's memory check.
// The engine's, the router's and each target kind's own settings are
// bounded by their Validate methods. docs/spec.md lists them all.
const (
	MaxWorkers        = 1024       // topology.replicas, prefill, decode (each)
	MaxNumPrompts     = 10_000_000 // workload.num_prompts, and a natural count
	MaxTokenLen       = 1 << 20    // every token length of a workload
	MaxConcurrency    = 100_000    // workload.arrival.max_concurrency
	MaxRequestRate    = 1e6        // requests per second, finite rates and ramps
	MaxBurstiness     = 1e3        // workload.arrival.burstiness
	MaxSweepRates     = 100        // workload.arrival.rates
	MaxWarmupRequests = 1_000_000  // warmup.requests
	MaxGatePrompts    = 1000       // gate.prompts, a count or a list
	MaxGateMaxTokens  = 4096       // gate.max_tokens
	MaxGatePromptLen  = 1 << 20    // bytes of one gate prompt
	MaxAsserts        = 256        // assert, baseline_metrics
	MaxHeaders        = 64         // workload.headers
	MaxExtraBodyBytes = 64 << 10   // workload.extra_body, JSON-encoded
	MaxStringLen      = 1024       // names, header values, prefixes
	MaxTimeScale      = 1e6        // workload.time_scale
	MaxTopK           = 1 << 20    // workload.top_k (a vocabulary's size)
	MaxTemperature    = 100.0      // workload.temperature
	// MaxWindowS (30 days) bounds a trace window; MaxRunSeconds (7 days) a
	// run; MaxMs (one day) think times and SLO thresholds.
	MaxWindowS    = 30 * 24 * 3600.0
	MaxRunSeconds = 7 * 24 * 3600.0
	MaxMs         = 24 * 3600 * 1000.0
)

// checkBounds checks the upper bounds of s's own sections (the lower
// bounds and the rules between fields are their Validate methods'); paths
// are full YAML paths.
func (s *Spec) checkBounds() error {
	var l field.Errors
	l.Check(field.MaxLen("name", s.Name, MaxStringLen))
	l.Check(topologyBounds(s.Topology)...)
	l.Nest("workload", s.Workload.checkBounds())
	l.Check(
		field.AtMost("warmup.requests", s.Warmup.Requests, MaxWarmupRequests),
		field.AtMost("slo.ttft_ms", s.SLO.TTFTMs, MaxMs),
		field.AtMost("slo.tpot_ms", s.SLO.TPOTMs, MaxMs),
		field.AtMost("slo.e2el_ms", s.SLO.E2ELMs, MaxMs),
		field.MaxItems("assert", len(s.Assert), MaxAsserts),
		field.MaxItems("baseline_metrics", len(s.BaselineMetrics), MaxAsserts),
		field.MaxLen("baseline", s.Baseline, MaxStringLen),
	)
	l.Nest("gate", s.Gate.checkBounds())
	return l.Err()
}

// topologyBounds bounds the worker counts.
func topologyBounds(t Topology) []error {
	return []error{
		field.AtMost("topology.replicas", t.Replicas, MaxWorkers),
		field.AtMost("topology.prefill", t.Prefill, MaxWorkers),
		field.AtMost("topology.decode", t.Decode, MaxWorkers),
	}
}

// checkBounds bounds the workload; paths are relative to workload:. A
// natural count (groups × prompts per group, sessions × turns) is bounded
// like num_prompts; a file's is known only when it is read, and trial
// run's memory check covers it.
func (w Workload) checkBounds() error {
	var l field.Errors
	l.Check(field.AtMost("num_prompts", w.NumPrompts, MaxNumPrompts))
	for _, f := range []struct {
		key string
		v   int
	}{
		{"input_len", w.InputLen}, {"output_len", w.OutputLen}, {"prefix_len", w.PrefixLen},
		{"system_prompt_len", w.SystemPromptLen}, {"question_len", w.QuestionLen},
		{"block_size", w.BlockSize}, {"session_prefix_blocks", w.SessionPrefixBlocks},
	} {
		l.Check(field.AtMost(f.key, f.v, MaxTokenLen))
	}
	l.Check(
		field.AtMost("num_groups", w.NumGroups, MaxNumPrompts),
		field.AtMost("prompts_per_group", w.PromptsPerGroup, MaxNumPrompts),
		field.AtMost("sessions", w.Sessions, MaxNumPrompts),
		field.AtMost("turns", w.Turns, MaxNumPrompts),
	)
	d := w.WithDefaults()
	if n := float64(d.NumGroups) * float64(d.PromptsPerGroup); w.NumPrompts == 0 && d.Kind == workload.SharedPrefix && n > MaxNumPrompts {
		l.Add("prompts_per_group", "num_groups × prompts_per_group is %.0f requests; at most %d (or set num_prompts)", n, MaxNumPrompts)
	}
	if n := float64(d.Sessions) * float64(d.Turns); w.NumPrompts == 0 && d.Kind == workload.MultiTurn && n > MaxNumPrompts {
		l.Add("turns", "sessions × turns is %.0f requests; at most %d (or set num_prompts)", n, MaxNumPrompts)
	}
	l.Check(
		field.AtMost("think_time_ms", w.ThinkTimeMs, MaxMs),
		field.AtMost("time_scale", w.TimeScale, MaxTimeScale),
		field.AtMost("window_start_s", w.WindowStartS, MaxWindowS),
		field.AtMost("window_end_s", w.WindowEndS, MaxWindowS),
		field.AtMost("max_seconds", w.MaxSeconds, MaxRunSeconds),
		field.AtMost("temperature", w.Temperature, MaxTemperature),
		field.AtMost("top_k", w.TopK, MaxTopK),
		field.MaxItems("headers", len(w.Headers), MaxHeaders),
		field.MaxLen("request_id_prefix", w.RequestIDPrefix, MaxStringLen),
		field.MaxLen("tokenizer", w.Tokenizer, MaxStringLen),
		field.MaxLen("path", w.Path, MaxStringLen),
	)
	for k, v := range w.Headers {
		l.Check(field.MaxLen("headers."+k, v, MaxStringLen))
	}
	if len(w.ExtraBody) > 0 {
		if b, err := json.Marshal(w.ExtraBody); err == nil && len(b) > MaxExtraBodyBytes {
			l.Add("extra_body", "is %d bytes as JSON; at most %d", len(b), MaxExtraBodyBytes)
		}
	}
	l.Nest("arrival", arrivalBounds(w))
	return l.Err()
}

// arrivalBounds bounds the arrival process; paths are relative to arrival:.
// An infinite request_rate means "all at once" and stays allowed.
func arrivalBounds(w Workload) error {
	a := w.Arrival
	var l field.Errors
	if !math.IsInf(a.RequestRate, 1) {
		l.Check(field.AtMost("request_rate", a.RequestRate, MaxRequestRate))
	}
	l.Check(
		field.AtMost("burstiness", a.Burstiness, MaxBurstiness),
		field.AtMost("max_concurrency", a.MaxConcurrency, MaxConcurrency),
		field.AtMost("ramp_up_start_rps", a.RampUpStartRPS, MaxRequestRate),
		field.AtMost("ramp_up_end_rps", a.RampUpEndRPS, MaxRequestRate),
		field.AtMost("rates", a.Rates, MaxSweepRates),
	)
	return l.Err()
}

// checkBounds bounds the gate; paths are relative to gate:.
func (g Gate) checkBounds() error {
	var l field.Errors
	l.Check(
		field.AtMost("prompts", g.Prompts.N(), MaxGatePrompts),
		field.AtMost("max_tokens", g.MaxTokens, MaxGateMaxTokens),
	)
	for i, p := range g.Prompts.List {
		l.Check(field.MaxLen(fmt.Sprintf("prompts[%d]", i), p, MaxGatePromptLen))
	}
	return l.Err()
}
