package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape: metric families by name.
type Families map[string]*dto.MetricFamily

// Fetch GETs url and parses its text exposition.
func Fetch(ctx context.Context, client *http.Client, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, fmt.Errorf("scraping %s: status %d", url, resp.StatusCode)
	}
	return Parse(resp.Body)
}

// Parse reads a text exposition.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return Families(fams), nil
}

// Sum adds every series of name whose labels include match (nil matches
// all). Counters, gauges and untyped series count; histograms and summaries
// contribute their sample count. A missing family sums to 0.
func (f Families) Sum(name string, match map[string]string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, m := range fam.GetMetric() {
		if matches(m, match) {
			total += value(m)
		}
	}
	return total
}

// By returns name's values keyed by the value of label, summing series that
// share it. Series without the label are keyed "".
func (f Families) By(name, label string) map[string]float64 {
	out := map[string]float64{}
	fam, ok := f[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		key := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				key = lp.GetValue()
			}
		}
		out[key] += value(m)
	}
	return out
}

// Has reports whether the scrape contains the family.
func (f Families) Has(name string) bool {
	_, ok := f[name]
	return ok
}

func matches(m *dto.Metric, match map[string]string) bool {
	for k, want := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount())
	}
	return 0
}
