package ledger

import (
	"fmt"
	"reflect"
	"strings"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	Minimize Direction = iota // latencies, failures, delays
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

// Metric is a numeric trial column usable in pareto, compare and where
// clauses. Its name is the column name and the JSON key.
type Metric struct {
	Name      string
	Direction Direction
}

// MetricList lists every metric: the Metrics fields (vllm bench serve's
// keys and autoinfer's), then the measured-window worker figures and the
// gate figures.
func MetricList() []Metric {
	var out []Metric
	for _, name := range columns(reflect.TypeFor[Metrics]()) {
		out = append(out, Metric{Name: name, Direction: direction(name)})
	}
	for _, name := range []string{"prefix_cache_hit_rate", "all_tiers_hit_rate", "preemptions", "cpu_tier_hits", "engine_lag_ratio",
		"gate_kl_mean", "gate_kl_max", "load_balancing_events"} {
		out = append(out, Metric{Name: name, Direction: direction(name)})
	}
	return out
}

// direction: latencies, failures, durations, delays and divergence are
// minimised; everything else (throughput, goodput, completions, token
// counts, peak concurrency, cache hit rate) is maximised.
func direction(name string) Direction {
	switch {
	case strings.HasSuffix(name, "_ms"), name == "failed", name == "duration", strings.HasPrefix(name, "gate_kl_"),
		name == "load_balancing_events", name == "preemptions", name == "engine_lag_ratio":
		return Minimize
	}
	return Maximize
}

// LookupMetric finds a metric by name; an unknown name is an error that
// lists the valid ones.
func LookupMetric(name string) (Metric, error) {
	names := make([]string, 0, 48)
	for _, m := range MetricList() {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Metric{}, fmt.Errorf("unknown metric %q (valid: %s)", name, strings.Join(names, ", "))
}

// Value returns the metric's value on a row, 0 when the row has none.
func (m Metric) Value(t Trial) float64 {
	v, _ := m.Lookup(t)
	return v
}

// Lookup returns the metric's value on a row; false when the row has none
// (a NULL figure: the workers did not export it, or the row predates it).
func (m Metric) Lookup(t Trial) (float64, bool) {
	vals := map[string]float64{}
	numericFields(reflect.ValueOf(t), vals)
	v, ok := vals[m.Name]
	return v, ok
}

// numericFields collects every numeric db column of a struct value that
// holds a value (nil pointers, NULL in the ledger, are left out).
func numericFields(v reflect.Value, out map[string]float64) {
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			numericFields(fv, out)
			continue
		}
		name := f.Tag.Get("db")
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch {
		case name == "" || name == "-":
		case fv.CanInt():
			out[name] = float64(fv.Int())
		case fv.CanFloat():
			out[name] = fv.Float()
		}
	}
}
