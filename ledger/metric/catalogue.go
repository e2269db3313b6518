package metric

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	Minimize Direction = iota // latencies, failures, delays, divergence
	Maximize                  // throughputs, completions, hit rates
)

func (d Direction) String() string {
	if d == Maximize {
		return "max"
	}
	return "min"
}

// Better reports whether a is strictly better than b.
func (d Direction) Better(a, b float64) bool {
	if d == Maximize {
		return a > b
	}
	return a < b
}

// Source says where a trial's value of a metric is read. Whatever the
// source, the value is found under the metric's name: in the driver
// summary's JSON (vllm bench serve's result keys), in the trial's values
// (adapter.Outcome.Values) and as the ledger column of that name.
type Source string

// Sources.
const (
	Summary Source = "summary" // the driver's summary key of the same name
	Workers Source = "workers" // the workers' Prometheus counters
	Gate    Source = "gate"    // the quality gate against the reference replica
	Router  Source = "router"  // the router's Prometheus counters
	// Requests: the trial's request records (shed_rate: 503/429 of the
	// measured requests).
	Requests Source = "requests"
)

// Metric is one catalogued figure.
type Metric struct {
	Name      string    `json:"name"`
	Unit      string    `json:"unit"`
	Direction Direction `json:"-"`
	Source    Source    `json:"source"`
	// Stored says the ledger has a column of this name, so pareto,
	// compare, --bound and baselines can read it from a row. Only the
	// on-demand latency percentiles (p95_ttft_ms) are not stored.
	Stored bool `json:"stored"`
}

// table is the catalogue, in the order listings show it. A new figure is
// one entry here plus its ledger column (a test holds the two together).
var table = append(append([]Metric{
	{"duration", "s", Minimize, Summary, true},
	{"completed", "requests", Maximize, Summary, true},
	{"failed", "requests", Minimize, Summary, true},
	{"total_input_tokens", "tokens", Maximize, Summary, true},
	{"total_output_tokens", "tokens", Maximize, Summary, true},
	{"request_throughput", "req/s", Maximize, Summary, true},
	{"request_goodput", "req/s", Maximize, Summary, true},
	{"output_throughput", "tok/s", Maximize, Summary, true},
	{"total_token_throughput", "tok/s", Maximize, Summary, true},
	{"max_output_tokens_per_s", "tok/s", Maximize, Summary, true},
	{"max_concurrent_requests", "requests", Maximize, Summary, true},
}, latencies("ttft", "tpot", "itl", "e2el")...),
	Metric{"mean_schedule_delay_ms", "ms", Minimize, Summary, true},
	Metric{"p99_schedule_delay_ms", "ms", Minimize, Summary, true},
	Metric{"max_schedule_delay_ms", "ms", Minimize, Summary, true},
	Metric{"achieved_request_rate", "req/s", Maximize, Summary, true},
	Metric{"prefix_cache_hit_rate", "fraction", Maximize, Workers, true},
	Metric{"all_tiers_hit_rate", "fraction", Maximize, Workers, true},
	Metric{"preemptions", "requests", Minimize, Workers, true},
	Metric{"cpu_tier_hits", "tokens", Maximize, Workers, true},
	Metric{"kv_transfer_failures", "transfers", Minimize, Workers, true},
	Metric{"engine_lag_ratio", "ratio", Minimize, Workers, true},
	Metric{"gate_kl_mean", "nats", Minimize, Gate, true},
	Metric{"gate_kl_max", "nats", Minimize, Gate, true},
	Metric{"load_balancing_events", "events", Minimize, Router, true},
	Metric{"shed_rate", "fraction", Minimize, Requests, true},
)

// latencyStats are the statistics the ledger stores per latency, in
// vllm bench serve's order.
var latencyStats = []string{"mean", "median", "std", "p50", "p90", "p99"}

// latencies expands the stored statistics of each latency metric
// (mean_ttft_ms … p99_ttft_ms).
func latencies(names ...string) []Metric {
	var out []Metric
	for _, n := range names {
		for _, s := range latencyStats {
			out = append(out, Metric{s + "_" + n + "_ms", "ms", Minimize, Summary, true})
		}
	}
	return out
}

// All lists the catalogue (every stored metric) in display order.
func All() []Metric { return append([]Metric(nil), table...) }

// Names lists the catalogued names in display order.
func Names() []string {
	out := make([]string, len(table))
	for i, m := range table {
		out[i] = m.Name
	}
	return out
}

// Lookup finds a stored metric: the ones a ledger row has a column for.
// An unknown name is an error that names it and lists the valid ones.
func Lookup(name string) (Metric, error) {
	for _, m := range table {
		if m.Name == name {
			return m, nil
		}
	}
	if _, ok := Percentile(name); ok {
		return Metric{}, fmt.Errorf("metric %q is not stored in the ledger (only p50, p90 and p99 are; stored: %s)", name, strings.Join(Names(), ", "))
	}
	return Metric{}, fmt.Errorf("unknown metric %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// Measured finds a metric a running trial can check (`--assert`): every
// stored metric, plus any latency percentile p{P}_{ttft|tpot|itl|e2el}_ms,
// which the driver computes on demand.
func Measured(name string) (Metric, error) {
	if m, err := Lookup(name); err == nil {
		return m, nil
	}
	if _, ok := Percentile(name); ok {
		return Metric{Name: name, Unit: "ms", Direction: Minimize, Source: Summary}, nil
	}
	return Metric{}, fmt.Errorf("unknown metric %q (valid: %s, or any latency percentile such as p95_ttft_ms)", name, strings.Join(Names(), ", "))
}

// percentileRE matches the latency percentiles: p99_ttft_ms, p99.9_e2el_ms.
var percentileRE = regexp.MustCompile(`^p(\d+(\.\d+)?)_(ttft|tpot|itl|e2el)_ms$`)

// Percentile returns P for a "p{P}_…_ms" metric (99 for p99_ttft_ms), so
// the runner can make the driver compute every percentile a check names.
func Percentile(name string) (float64, bool) {
	m := percentileRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	p, err := strconv.ParseFloat(m[1], 64)
	return p, err == nil && p > 0 && p < 100
}

// Format renders v in the metric's unit: "612.4 ms", "82.8 %".
func (m Metric) Format(v float64) string {
	switch m.Unit {
	case "fraction":
		return strconv.FormatFloat(100*v, 'f', 1, 64) + " %"
	case "":
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64) + " " + m.Unit
}
