package router

import (
	"context"
	"fmt"
	"sync"

	"github.com/autoinfer/autoinfer/target/scrape"
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
	fams, err := scrape.Fetch(ctx, r.client, base+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("queue depth: %w", err)
	}
	return int64(fams.Sum(queueMetric, nil)), nil
}
