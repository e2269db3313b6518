package router

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/autoinfer/autoinfer/target/scrape"
)

// engineUpMetric says, per worker, whether its /metrics was scraped for
// GET /engine_metrics (1) or not (0), so a missing worker is visible rather
// than silently absent from the sums.
const engineUpMetric = "autoinfer:engine_metrics_up"

// engineMetrics is GET /engine_metrics: every worker's /metrics in one
// Prometheus text exposition, each series labelled with its worker and
// pool, plus engineUpMetric. 502 when no worker could be scraped.
func (r *Router) engineMetrics(w http.ResponseWriter, req *http.Request) {
	fams := map[string]*dto.MetricFamily{}
	up := &dto.MetricFamily{Name: proto.String(engineUpMetric), Type: dto.MetricType_GAUGE.Enum(),
		Help: proto.String("1 if the worker's /metrics was scraped for this answer, else 0.")}
	scraped := 0
	var mu sync.Mutex
	results := r.fanOut(req.Context(), func(ctx context.Context, m member) WorkerResult {
		got, err := scrape.Fetch(ctx, r.client, m.w.url+"/metrics")
		labels := []*dto.LabelPair{{Name: proto.String("worker"), Value: proto.String(m.w.url)},
			{Name: proto.String("pool"), Value: proto.String(m.pool.name)}}
		v := 0.0
		if err == nil {
			v = 1
		}
		mu.Lock()
		defer mu.Unlock()
		up.Metric = append(up.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v)}})
		if err != nil {
			return WorkerResult{Error: err.Error()}
		}
		scraped++
		mergeFamilies(fams, got, labels)
		return WorkerResult{}
	})
	if len(results) == 0 {
		writeError(w, newAPIError(http.StatusServiceUnavailable, ErrTypeNoAvailableWorkers, "engine metrics: the router has no workers"))
		return
	}
	if scraped == 0 {
		writeError(w, newAPIError(http.StatusBadGateway, ErrTypeUpstreamError, "engine metrics: no worker's /metrics could be scraped: "+results[0].URL+": "+results[0].Error))
		return
	}
	fams[engineUpMetric] = up
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	w.Header().Set("Content-Type", string(format))
	w.WriteHeader(http.StatusOK)
	enc := expfmt.NewEncoder(w, format)
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		f := fams[name]
		slices.SortStableFunc(f.Metric, func(a, b *dto.Metric) int { return compareLabels(a.Label, b.Label) })
		if err := enc.Encode(f); err != nil {
			r.log.Debug("engine metrics: client left", "err", err)
			return
		}
	}
}

// mergeFamilies adds src's series to dst with labels appended. A family
// whose type differs from one already merged under the same name is left
// out: one exposition cannot hold both.
func mergeFamilies(dst map[string]*dto.MetricFamily, src scrape.Families, labels []*dto.LabelPair) {
	for name, f := range src {
		have, ok := dst[name]
		if !ok {
			have = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type, Unit: f.Unit}
			dst[name] = have
		} else if have.GetType() != f.GetType() {
			continue
		}
		for _, m := range f.Metric {
			m.Label = append(slices.DeleteFunc(m.Label, func(l *dto.LabelPair) bool {
				return l.GetName() == "worker" || l.GetName() == "pool"
			}), labels...)
			have.Metric = append(have.Metric, m)
		}
	}
}

// compareLabels orders series by their label values, so the exposition is
// the same from one call to the next.
func compareLabels(a, b []*dto.LabelPair) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].GetName(), b[i].GetName()); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].GetValue(), b[i].GetValue()); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}
