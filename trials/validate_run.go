package trials

import (
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/ledger/metric"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Validate checks the counts and the engine; paths are relative to
// topology:. How the counts pair up is checked with the rest of the spec
// (validateTopology), since it depends on the target.
func (t Topology) Validate() error {
	var l field.Errors
	l.Check(
		field.AtLeast("replicas", t.Replicas, 0),
		field.AtLeast("prefill", t.Prefill, 0),
		field.AtLeast("decode", t.Decode, 0),
	)
	l.Nest("engine", t.Engine.Validate())
	return l.Err()
}

// Validate runs the driver's own checks of the workload and the arrival
// process, then the trial's; paths are relative to workload:.
func (w Workload) Validate() error {
	var l field.Errors
	if w.Kind == "" {
		l.Add("kind", "required (random, shared_prefix, multi_turn or trace)")
	} else {
		l.Nest("", w.Workload.Validate())
	}
	l.Nest("arrival", w.Arrival.Validate())
	if w.Endpoint != EndpointCompletions && w.Endpoint != EndpointChat {
		l.Add("endpoint", "must be %s or %s (got %q)", EndpointCompletions, EndpointChat, w.Endpoint)
	}
	l.Check(field.AtLeast("num_prompts", w.NumPrompts, 0))
	if w.Kind == workload.Random && w.NumPrompts == 0 {
		l.Add("num_prompts", "required for kind random (it has no natural count)")
	}
	return l.Err()
}

// Validate checks the warm-up count; paths are relative to warmup:.
func (w Warmup) Validate() error {
	return field.AtLeast("requests", w.Requests, 0)
}

// Validate checks the thresholds; paths are relative to slo:.
func (s SLO) Validate() error {
	var l field.Errors
	l.Check(
		field.AtLeast("ttft_ms", s.TTFTMs, 0),
		field.AtLeast("tpot_ms", s.TPOTMs, 0),
		field.AtLeast("e2el_ms", s.E2ELMs, 0),
	)
	return l.Err()
}

// Validate checks the gate (already defaulted); paths are relative to
// gate:. Without a reference the other keys are ignored.
func (g Gate) Validate() error {
	var l field.Errors
	switch g.Reference {
	case ReferenceNone:
		return nil
	case ReferenceURL:
		if g.URL == "" {
			l.Add("url", "required when reference is url")
		} else {
			l.Check(field.HTTPURL("url", g.URL))
		}
	case ReferenceSim:
		if g.URL != "" {
			l.Add("url", "only when reference is url")
		}
	default:
		l.Check(field.OneOf("reference", g.Reference, ReferenceSim, ReferenceURL, ReferenceNone))
	}
	if g.Prompts.N() < 1 {
		l.Add("prompts", "must be ≥ 1 prompt")
	}
	for i, t := range g.Prompts.List {
		if strings.TrimSpace(t) == "" {
			l.Add(fmt.Sprintf("prompts[%d]", i), "must not be empty")
		}
	}
	if g.TopLogprobs != 0 {
		l.Check(field.Between("top_logprobs", g.TopLogprobs, 1, 20))
	}
	if g.MaxTokens != 0 {
		l.Check(field.AtLeast("max_tokens", g.MaxTokens, 1))
	}
	if !(g.KLThreshold > 0) {
		l.Add("kl_threshold", "must be > 0 (got %v)", g.KLThreshold)
	}
	return l.Err()
}

// validateChecks parses the CI checks: assertions, baseline and tolerance.
func validateChecks(s *Spec, p *problems) {
	for i, a := range s.Assert {
		if _, err := ParseAssertion(a); err != nil {
			p.add(fmt.Sprintf("assert[%d]", i), "%v", err)
		}
	}
	if s.Baseline == "" {
		if s.Tolerance != "" {
			p.add("tolerance", "needs a baseline")
		}
		if len(s.BaselineMetrics) > 0 {
			p.add("baseline_metrics", "needs a baseline")
		}
		return
	}
	if _, err := ParseTolerance(s.Tolerance); err != nil {
		p.add("tolerance", "%v", err)
	}
	for i, m := range s.BaselineMetrics {
		// A baseline is read from a ledger row: only stored metrics.
		if _, err := metric.Lookup(m); err != nil {
			p.add(fmt.Sprintf("baseline_metrics[%d]", i), "%v", err)
		}
	}
}
