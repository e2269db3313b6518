package trials

import (
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/static"
)

// Defaults a spec may leave out. docs/spec.md lists them all.
const (
	DefaultWarmupRequests = 100
	DefaultSimProfile     = "h100-llama3-8b"
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
		Router: Router{Config: router.DefaultConfig()},
	}
}

// applyDefaults fills in the defaults that depend on other fields. present
// reports whether the spec wrote a path (an explicit zero differs from an
// absent key there).
func applyDefaults(s *Spec, present func(string) bool) {
	t := &s.Target
	if t.Kind == "" {
		t.Kind = KindSim
	}
	switch t.Kind {
	case KindSim:
		t.Profile = or(t.Profile, DefaultSimProfile)
	case KindStatic:
		t.HealthPath = or(t.HealthPath, target.DefaultHealthPath)
		t.HealthTimeout = orDur(t.HealthTimeout, static.DefaultHealthTimeout)
		// The URLs say how many workers there are; counts in topology are
		// checked against them.
		if !present("topology.replicas") && !present("topology.prefill") && !present("topology.decode") {
			s.Topology.Replicas, s.Topology.Prefill, s.Topology.Decode = len(t.Workers), len(t.Prefill), len(t.Decode)
		}
	case KindProcess:
		t.Host = or(t.Host, process.DefaultHost)
		t.HealthPath = or(t.HealthPath, target.DefaultHealthPath)
		t.StartupTimeout = orDur(t.StartupTimeout, process.DefaultStartupTimeout)
		t.StopGracePeriod = orDur(t.StopGracePeriod, process.DefaultStopGracePeriod)
	}
	if !s.Topology.PD() && !present("topology.replicas") {
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
		// A simulated reference only makes sense next to simulated or
		// simulator-compatible workers; real servers need a reference URL.
		g.Reference = ReferenceNone
		if t.Kind == KindSim {
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

func orDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
