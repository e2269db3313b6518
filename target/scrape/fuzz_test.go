package scrape

import (
	"strings"
	"testing"
)

// Prometheus scrapes of workers and routers are outside input: whatever a
// target serves, Parse never panics, and every family it returns can be
// read with Sum, By and Has.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n",
		"# TYPE c counter\nc_total{a=\"1\",b=\"x\\\"y\"} 1e3 1700000000000\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n",
		"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 2\n",
		"untyped NaN\n", "bad line\n", "# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fams, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		for name, fam := range fams {
			_ = fams.Sum(name, nil)
			_ = fams.Sum(name, map[string]string{"model_name": "m"})
			by := fams.By(name, "model_name")
			if !fams.Has(name) || fam == nil || len(by) > len(fam.GetMetric()) {
				t.Fatalf("family %q: %d series, %d label values", name, len(fam.GetMetric()), len(by))
			}
		}
	})
}
