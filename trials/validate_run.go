package trials

import (
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// validateWorkload runs the driver's own checks, whose messages start with
// the offending key.
func validateWorkload(w Workload, p *problems) {
	if w.Kind == "" {
		p.add("workload.kind", "required (random, shared_prefix, multi_turn or trace)")
	} else if err := w.Workload.Validate(); err != nil {
		addKeyed(p, "workload", err)
	}
	if err := w.Arrival.Validate(); err != nil {
		addKeyed(p, "workload.arrival", err)
	}
	if w.Arrival.Kind == arrival.Sweep {
		p.add("workload.arrival.kind", "sweep runs through `autoinfer bench --profile sweep`; a trial records one rate per row and does not run sweeps yet")
	}
	if w.Endpoint != EndpointCompletions && w.Endpoint != EndpointChat {
		p.add("workload.endpoint", "must be %s or %s (got %q)", EndpointCompletions, EndpointChat, w.Endpoint)
	}
	if w.Kind == workload.Random && w.NumPrompts == 0 {
		p.add("workload.num_prompts", "required for kind random (it has no natural count)")
	}
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
		if !IsMetric(m) {
			p.add(fmt.Sprintf("baseline_metrics[%d]", i), "unknown metric %q", m)
		}
	}
}

func validateGate(g Gate, p *problems) {
	switch g.Reference {
	case ReferenceNone:
		return
	case ReferenceURL:
		if g.URL == "" {
			p.add("gate.url", "required when reference is url")
		}
	case ReferenceSim:
		if g.URL != "" {
			p.add("gate.url", "only when reference is url")
		}
	}
	if g.Prompts.N() < 1 {
		p.add("gate.prompts", "must be ≥ 1 prompt")
	}
	for i, t := range g.Prompts.List {
		if strings.TrimSpace(t) == "" {
			p.add(fmt.Sprintf("gate.prompts[%d]", i), "must not be empty")
		}
	}
	if !(g.KLThreshold > 0) {
		p.add("gate.kl_threshold", "must be > 0 (got %v)", g.KLThreshold)
	}
}
