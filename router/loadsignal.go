package router

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// queueMetric is the vLLM gauge blended into the load signal.
const queueMetric = "vllm:num_requests_waiting"

// loadLoop scrapes every worker's queue depth each load_check_interval_secs
// for the "in_flight+queue" signal.
func (r *Router) loadLoop(ctx context.Context) {
	scrape := func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, p := range r.pools {
			for _, w := range p.Workers() {
				wg.Go(func() {
					n, err := r.scrapeQueue(ctx, w.url)
					if err != nil {
						r.log.Debug("queue scrape failed", "worker", w.url, "err", err)
						return
					}
					w.queue.Store(n)
				})
			}
		}
		wg.Wait()
	}
	scrape(ctx)
	tick(ctx, secs(r.cfg.LoadCheckIntervalSecs), scrape)
}

// scrapeQueue sums vllm:num_requests_waiting over a worker's /metrics.
func (r *Router) scrapeQueue(ctx context.Context, base string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, secs(r.cfg.HealthCheck.TimeoutSecs))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("scraping queue depth: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scraping queue depth: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return 0, fmt.Errorf("scraping queue depth: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("parsing worker metrics: %w", err)
	}
	var n float64
	if fam := fams[queueMetric]; fam != nil {
		for _, m := range fam.GetMetric() {
			n += m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return int64(n), nil
}
