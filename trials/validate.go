package trials

import (
	"regexp"

	"github.com/autoinfer/autoinfer/target"
)

// nameRE keeps trial names safe in file names, ledger queries and the
// "base/path=value" names of matrix trials.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validate checks s (already defaulted) and records every problem in p.
// Each section checks its own fields (Validate methods, here and in the
// packages that own the section's type); what spans sections, or depends
// on which keys the spec wrote (present), is checked here.
func validate(s *Spec, base string, present func(string) bool, p *problems) {
	if base == "" {
		p.add("name", "required")
	} else if !nameRE.MatchString(base) {
		p.add("name", "must be letters, digits, '.', '_' or '-' (got %q)", base)
	}
	if s.Target.Options != nil {
		p.nest("target", s.Target.Options.Validate(s.Topology.Target()))
		reports, _ := s.Target.Options.(target.HardwareReporter)
		switch sim := simulated(s.Target); {
		case s.Target.Hardware == "" && !sim && (reports == nil || !reports.ReportsHardware()):
			p.add("target.hardware", "required for kind %s: a label for what the workers run on, e.g. 8xH100-SXM (rows on different hardware are never compared)", s.Target.Kind)
		case s.Target.Hardware != "" && sim:
			p.add("target.hardware", "not for kind %s: its profile identifies the simulated hardware", s.Target.Kind)
		}
	}
	validateRepeats(s, present, p)
	validateClock(s, p)
	p.nest("topology", s.Topology.Validate())
	validateTopology(s, present, p)
	p.nest("", s.checkBounds())
	if s.RouterLaunched() {
		validateRouter(s, present, p)
	}
	p.nest("workload", s.Workload.Validate())
	validateSweep(s, p)
	p.nest("warmup", s.Warmup.Validate())
	p.nest("slo", s.SLO.Validate())
	p.nest("checks", s.Checks.Validate())
	validateChecks(s, p)
	p.nest("gate", s.Gate.Validate())
	if s.Gate.Reference == ReferenceSim && s.Target.Options != nil && !simulated(s.Target) {
		p.add("gate.reference", "sim needs simulated workers (kind %s runs real servers): use url or none", s.Target.Kind)
	}
}

// validateTopology checks the prefill/decode pairing and, for targets that
// list their workers, that the counts the spec wrote agree with the list.
func validateTopology(s *Spec, present func(string) bool, p *problems) {
	topo := s.Topology
	listed, isListed := s.Target.Options.(target.ListedWorkers)
	switch {
	case topo.PD() && topo.Replicas > 0:
		p.add("topology.replicas", "must not be set with prefill and decode (they replace it)")
	case topo.PD() && topo.Prefill < 1:
		p.add("topology.prefill", "must be ≥ 1 when decode is set")
	case topo.PD() && topo.Decode < 1:
		p.add("topology.decode", "must be ≥ 1 when prefill is set")
	case !topo.PD() && topo.Replicas < 1 && (present("topology.replicas") || !isListed):
		p.add("topology.replicas", "must be ≥ 1")
	}
	if !isListed {
		return
	}
	n := listed.Listed()
	for _, c := range []struct {
		key     string
		n, urls int
	}{{"replicas", topo.Replicas, n.Replicas}, {"prefill", topo.Prefill, n.Prefill}, {"decode", topo.Decode, n.Decode}} {
		if c.urls != c.n && present("topology."+c.key) {
			p.add("topology."+c.key, "is %d but target lists %d URLs for that role", c.n, c.urls)
		}
	}
}
