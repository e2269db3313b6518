package metric

import (
	"strings"
	"testing"
)

func TestCatalogueNamesAreUniqueAndStored(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name] {
			t.Errorf("%s catalogued twice", m.Name)
		}
		seen[m.Name] = true
		if !m.Stored || m.Unit == "" || m.Source == "" {
			t.Errorf("%+v: every catalogued metric is stored and has a unit and a source", m)
		}
	}
}

func TestDirections(t *testing.T) {
	for name, want := range map[string]Direction{
		"p99_ttft_ms": Minimize, "output_throughput": Maximize, "failed": Minimize, "request_goodput": Maximize,
		"prefix_cache_hit_rate": Maximize, "gate_kl_max": Minimize, "achieved_request_rate": Maximize,
		"load_balancing_events": Minimize, "p99_schedule_delay_ms": Minimize,
	} {
		m, err := Lookup(name)
		if err != nil || m.Direction != want {
			t.Errorf("Lookup(%s) = %v, %v; want direction %v", name, m.Direction, err, want)
		}
	}
}

// The list that drifted: achieved_request_rate was a pareto axis but no
// assertion metric. Both now read this one table.
func TestMeasuredCoversEveryStoredMetricAndPercentiles(t *testing.T) {
	for _, m := range All() {
		if _, err := Measured(m.Name); err != nil {
			t.Errorf("Measured(%s): %v", m.Name, err)
		}
	}
	m, err := Measured("p99.9_e2el_ms")
	if err != nil || m.Stored || m.Direction != Minimize || m.Unit != "ms" {
		t.Errorf("Measured(p99.9_e2el_ms) = %+v, %v; want an unstored ms latency", m, err)
	}
	if p, ok := Percentile("p99.9_e2el_ms"); !ok || p != 99.9 {
		t.Errorf("Percentile(p99.9_e2el_ms) = %v, %v", p, ok)
	}
	for _, bad := range []string{"p100_ttft_ms", "p0_ttft_ms", "p99_tft_ms", "mean_foo_ms"} {
		if _, err := Measured(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("Measured(%s) = %v, want an error naming it", bad, err)
		}
	}
}

func TestLookupErrorsNameTheMetricAndTheValidOnes(t *testing.T) {
	_, err := Lookup("p99_tft_ms")
	if err == nil || !strings.Contains(err.Error(), `"p99_tft_ms"`) || !strings.Contains(err.Error(), "p99_ttft_ms") {
		t.Errorf("Lookup(p99_tft_ms) = %v: want the name and the valid list", err)
	}
	_, err = Lookup("p95_ttft_ms")
	if err == nil || !strings.Contains(err.Error(), "not stored") {
		t.Errorf("Lookup(p95_ttft_ms) = %v: want 'not stored' (it is measurable but has no column)", err)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{{"prefix_cache_hit_rate", 0.828, "82.8 %"}, {"p99_ttft_ms", 612.4, "612.4 ms"}, {"output_throughput", 1234.5, "1234.5 tok/s"}} {
		m, _ := Lookup(c.name)
		if got := m.Format(c.v); got != c.want {
			t.Errorf("%s.Format(%v) = %q, want %q", c.name, c.v, got, c.want)
		}
	}
}

func TestPercentileRejectsNonPercentiles(t *testing.T) {
	for _, in := range []string{"mean_ttft_ms", "output_throughput", "p100_ttft_ms", "p99_schedule_delay_ms"} {
		if _, ok := Percentile(in); ok {
			t.Errorf("Percentile(%q) ok", in)
		}
	}
}
