package trials

import (
	"slices"

	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target"
)

// Defaults a spec may leave out. docs/spec.md lists them all.
const (
	DefaultWarmupRequests = 100
	DefaultGatePrompts    = 8
	DefaultTopLogprobs    = 5
	DefaultGateMaxTokens  = 16
	DefaultKLThreshold    = 0.05
	DefaultTolerance      = "10%"
)

// DefaultBaselineMetrics are compared with a baseline when the spec names
// none: the tail latencies users gate on and the throughput.
var DefaultBaselineMetrics = []string{"p99_ttft_ms", "p99_tpot_ms", "output_throughput"}

// initialSpec is what decoding starts from: defaults whose zero value is
// also a legal explicit setting (warmup.requests: 0 means no warm-up) must
// be in place before the YAML overwrites them.
func initialSpec() Spec {
	return Spec{
		Warmup: Warmup{Requests: DefaultWarmupRequests},
		Checks: defaultChecks(),
		Router: Router{Config: routerconfig.Default()},
	}
}

// applyDefaults fills in the defaults that depend on other fields. present
// reports whether the spec wrote a path (an explicit zero differs from an
// absent key there).
func applyDefaults(s *Spec, present func(string) bool) {
	if s.Target.Options != nil {
		s.Target.Options.Default()
	}
	// Listed workers say how many there are; counts the spec writes in
	// topology are checked against them.
	counted := present("topology.replicas") || present("topology.prefill") || present("topology.decode")
	switch l, listed := s.Target.Options.(target.ListedWorkers); {
	case listed && !counted:
		// One replica per listed URL (docs/spec.md).
		n := l.Listed()
		s.Topology.Replicas, s.Topology.Prefill, s.Topology.Decode = n.Replicas, n.Prefill, n.Decode
	case !s.Topology.PD() && !present("topology.replicas"):
		s.Topology.Replicas = 1
	}

	if s.Workload.Endpoint == "" {
		s.Workload.Endpoint = EndpointCompletions
	}

	r := &s.Router
	r.Launch = or(r.Launch, LaunchEmbedded)
	// The trial picks a free port for every fresh router.
	r.Port = 0
	// The router addresses each worker as data_parallel_size ranks: follow
	// the engine unless the spec says otherwise (a mismatch is an error).
	if dp := s.Topology.Engine.DataParallelSize; dp > 1 && !present("router.intra_node_data_parallel_size") {
		r.IntraNodeDataParallelSize = dp
	}

	g := &s.Gate
	if g.Reference == "" {
		// A simulated reference only makes sense next to simulated
		// workers; real servers need a reference URL.
		g.Reference = ReferenceNone
		if simulated(s.Target) {
			g.Reference = ReferenceSim
		}
	}
	if g.Reference == ReferenceNone {
		s.Gate = Gate{Reference: ReferenceNone}
	} else {
		if g.Prompts.List == nil && g.Prompts.Count == 0 && !present("gate.prompts") {
			g.Prompts.Count = DefaultGatePrompts
		}
		g.TopLogprobs = orInt(g.TopLogprobs, DefaultTopLogprobs)
		g.MaxTokens = orInt(g.MaxTokens, DefaultGateMaxTokens)
		if g.KLThreshold == 0 && !present("gate.kl_threshold") {
			g.KLThreshold = DefaultKLThreshold
		}
	}

	if s.Baseline != "" {
		s.Tolerance = or(s.Tolerance, DefaultTolerance)
		if len(s.BaselineMetrics) == 0 {
			// A copy: the trial owns its list, and editing it must not
			// change the default for every later spec.
			s.BaselineMetrics = slices.Clone(DefaultBaselineMetrics)
		}
	}
}

// RouterLaunched reports whether the trial runs a router: always except
// for one replica without prefill/decode disaggregation, where the driver
// talks to the worker directly.
func (s Spec) RouterLaunched() bool { return s.Topology.PD() || s.Topology.Replicas > 1 }

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// simulated reports whether t's workers are simulated engines.
func simulated(t Target) bool {
	sw, ok := t.Options.(target.SimulatedWorkers)
	return ok && sw.Simulated()
}

// profiled reports whether t's options name a profile of its workers.
func profiled(t Target) bool {
	pw, ok := t.Options.(target.ProfiledWorkers)
	return ok && pw.Profiled()
}
