package trials

import (
	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
)

// Spec is one trial, fully expanded: after Parse there is no matrix left and
// every default is filled in. Field docs give the YAML key; docs/spec.md is
// the reference.
type Spec struct {
	// Name identifies the trial in the ledger; a matrix appends the varying
	// values ("quickstart/router.policy=cache_aware").
	Name string `yaml:"name" json:"name"`
	// Seed seeds the workload and the gate prompts. Every trial of a sweep
	// has the same seed, hence the same request bytes.
	Seed int64 `yaml:"seed" json:"seed"`
	// Repeats runs the trial this many times as replicates of one trial,
	// each with a seed derived from Seed (see DeriveSeed). Absent or 1 means
	// one run, kept as 0 so the spec hash equals a spec without the key.
	Repeats int `yaml:"repeats" json:"repeats,omitempty"`
	// Clock is "" (real time) or "virtual": the deployment simulated on one
	// discrete-event clock (docs/whatif.md). It is part of the spec hash.
	Clock string `yaml:"clock" json:"clock,omitempty"`
	// HTTPOverheadMs is added to every request's TTFT and E2E latency on
	// the virtual clock: what the HTTP path (client, router hop, engine
	// front end, SSE delivery) costs in real time, which the virtual clock
	// does not run. Measure it with `autoinfer sim overhead SPEC`. A
	// real-time trial ignores it, and it is left out of a real trial's
	// spec hash.
	HTTPOverheadMs float64 `yaml:"http_overhead_ms" json:"http_overhead_ms,omitempty"`
	// HTTPInboundMs is the part of HTTPOverheadMs before the engine: on the
	// virtual clock a request reaches the router's policy and its engine
	// this long after it was sent, and its tokens reach the client
	// HTTPOverheadMs − HTTPInboundMs after the engine emitted them. At most
	// HTTPOverheadMs; left out of a real trial's spec hash.
	HTTPInboundMs float64 `yaml:"http_inbound_ms" json:"http_inbound_ms,omitempty"`
	// EngineLagMs is, on the virtual clock, how late each simulated
	// engine's loop runs behind its modelled schedule in real time (timer
	// and goroutine wake-up): a step's tokens are emitted this long after
	// its planned end and the next step is planned then. Measure it with
	// `autoinfer sim overhead SPEC`; left out of a real trial's spec hash.
	EngineLagMs float64 `yaml:"engine_lag_ms" json:"engine_lag_ms,omitempty"`
	// EngineWakeMs is, on the virtual clock, how late a step completes
	// that an idle simulated engine planned when an arrival woke it: the
	// step starts at the arrival and its tokens are emitted this long after
	// its planned end, instead of EngineLagMs (a woken loop plans within
	// microseconds, and that step's timer is late by its own amount).
	// Measured by `autoinfer sim overhead SPEC`; left out of a real
	// trial's spec hash.
	EngineWakeMs float64  `yaml:"engine_wake_ms" json:"engine_wake_ms,omitempty"`
	Target       Target   `yaml:"target" json:"target"`
	Topology     Topology `yaml:"topology" json:"topology"`
	// Router is ignored (and zeroed) when no router is launched: one
	// replica without prefill/decode disaggregation.
	Router   Router   `yaml:"router" json:"router"`
	Workload Workload `yaml:"workload" json:"workload"`
	Warmup   Warmup   `yaml:"warmup" json:"warmup"`
	SLO      SLO      `yaml:"slo" json:"slo"`
	// Checks bound the host's own lag (driver schedule delay, engine lag).
	Checks Checks `yaml:"checks" json:"checks"`
	// Assert are CI checks such as "p99_ttft_ms < 500"; see ParseAssertion.
	Assert []string `yaml:"assert" json:"assert,omitempty"`
	// Baseline is a ledger row id or a trial name to compare against.
	Baseline string `yaml:"baseline" json:"baseline,omitempty"`
	// Tolerance is how much worse than the baseline a metric may be: "10%".
	Tolerance string `yaml:"tolerance" json:"tolerance,omitempty"`
	// BaselineMetrics are the metrics compared with the baseline.
	BaselineMetrics []string `yaml:"baseline_metrics" json:"baseline_metrics,omitempty"`
	Gate            Gate     `yaml:"gate" json:"gate"`
}

// Topology is how many workers of each role run, and their engine config.
type Topology struct {
	Replicas int `yaml:"replicas" json:"replicas,omitempty"`
	Prefill  int `yaml:"prefill" json:"prefill,omitempty"`
	Decode   int `yaml:"decode" json:"decode,omitempty"`
	// Engine is the one typed engine map: the sim target applies it to its
	// engines, the process target renders it as vLLM flags ({engine_args}).
	Engine engine.Config `yaml:"engine" json:"engine"`
}

// PD reports whether prefill and decode are disaggregated.
func (t Topology) PD() bool { return t.Prefill > 0 || t.Decode > 0 }

// Target converts t to the type targets provision.
func (t Topology) Target() target.Topology {
	return target.Topology{Replicas: t.Replicas, Prefill: t.Prefill, Decode: t.Decode, Engine: t.Engine}
}

// Router launch modes.
const (
	LaunchEmbedded = "embedded" // in-process
	LaunchProcess  = "process"  // `autoinfer router serve` as a child
	LaunchExternal = "external" // a vllm-router-compatible binary
)

// Router is the router's routerconfig.Config (inlined: its keys sit directly under
// `router:`) plus how to launch it. Worker URLs, host and port are filled
// in per trial, so a spec must not set them.
type Router struct {
	Launch string `yaml:"launch" json:"launch,omitempty"`
	// Binary is the executable for launch external.
	Binary              string `yaml:"binary" json:"binary,omitempty"`
	routerconfig.Config `yaml:",inline"`
}

// Endpoints the driver can send to.
const (
	EndpointCompletions = "/v1/completions"
	EndpointChat        = "/v1/chat/completions"
)

// Workload is what the driver sends: the workload knobs (driver/workload,
// inlined: kind, input_len, num_groups, …), how many requests, to which
// endpoint, and when (driver/arrival).
type Workload struct {
	workload.Workload `yaml:",inline"`
	// NumPrompts is the number of measured requests; 0 means the workload's
	// natural count (groups × prompts per group, sessions × turns, trace
	// lines).
	NumPrompts int             `yaml:"num_prompts" json:"num_prompts,omitempty"`
	Endpoint   string          `yaml:"endpoint" json:"endpoint"`
	Arrival    arrival.Arrival `yaml:"arrival" json:"arrival"`
}

// Warmup primes a fresh router outside the measured window.
type Warmup struct {
	Requests int `yaml:"requests" json:"requests"`
}

// SLO thresholds in milliseconds define goodput (0 = not part of it).
type SLO struct {
	TTFTMs float64 `yaml:"ttft_ms" json:"ttft_ms,omitempty"`
	TPOTMs float64 `yaml:"tpot_ms" json:"tpot_ms,omitempty"`
	E2ELMs float64 `yaml:"e2el_ms" json:"e2el_ms,omitempty"`
}

// Gate references.
const (
	ReferenceSim  = "sim"  // a simulated engine at full precision
	ReferenceURL  = "url"  // a running server at Gate.URL
	ReferenceNone = "none" // no quality gate
)

// Gate compares the deployment's top-k logprobs at temperature 0 with a
// reference replica's on the same prompts.
type Gate struct {
	Reference   string      `yaml:"reference" json:"reference"`
	URL         string      `yaml:"url" json:"url,omitempty"`
	Prompts     GatePrompts `yaml:"prompts" json:"prompts"`
	TopLogprobs int         `yaml:"top_logprobs" json:"top_logprobs,omitempty"`
	MaxTokens   int         `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// KLThreshold fails the gate when the mean per-token KL divergence
	// exceeds it.
	KLThreshold float64 `yaml:"kl_threshold" json:"kl_threshold,omitempty"`
}
