package router

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/target/scrape"
)

// SLO headers (llm-d's names): a request's TTFT and TPOT objectives in
// milliseconds, read when a policy routes on them (predicted_latency).
const (
	HeaderSLOTTFT = "X-Slo-Ttft-Ms"
	HeaderSLOTPOT = "X-Slo-Tpot-Ms"
)

// Worker latency histograms the latency feed reads.
const (
	ttftHistogram = "vllm:time_to_first_token_seconds"
	tpotHistogram = "vllm:time_per_output_token_seconds"
)

// sloHeaders reads a request's SLO headers; a value that is not a positive
// number of milliseconds is a 400 naming the header.
func sloHeaders(req *http.Request) (policy.SLO, *apiError) {
	var slo policy.SLO
	for _, h := range []struct {
		name string
		dst  *time.Duration
	}{{HeaderSLOTTFT, &slo.TTFT}, {HeaderSLOTPOT, &slo.TPOT}} {
		v := req.Header.Get(h.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n > 0) || n > 1e9 {
			return slo, newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest,
				fmt.Sprintf("header %s: want a positive number of milliseconds, got %q", h.name, v))
		}
		*h.dst = time.Duration(n * float64(time.Millisecond))
	}
	return slo, nil
}

// histMean is one worker's cumulative latency histogram totals.
type histMean struct{ sum, count float64 }

func histTotals(f scrape.Families, name string) histMean {
	var h histMean
	if fam := f[name]; fam != nil {
		for _, m := range fam.GetMetric() {
			h.sum += m.GetHistogram().GetSampleSum()
			h.count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return h
}

// latencyLoop feeds observers among the pools' policies every
// load_check_interval_secs: each worker's mean TTFT and TPOT over the
// requests it finished since the last scrape (its own histograms), with
// the load it carries now.
func (r *Router) latencyLoop(ctx context.Context) {
	type last struct{ ttft, tpot histMean }
	prev := map[*Worker]last{}
	var mu sync.Mutex
	scrapeAll := func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, p := range r.pools {
			obs, ok := p.policy.(policy.Observer)
			if n, reads := p.policy.(policy.Needer); !ok || !reads || !n.Needs().Latency {
				continue
			}
			for _, w := range p.Workers() {
				wg.Go(func() {
					sctx, cancel := context.WithTimeout(ctx, secs(r.cfg.HealthCheck.TimeoutSecs))
					defer cancel()
					fams, err := scrape.Fetch(sctx, r.client, w.url+"/metrics")
					if err != nil {
						r.log.Debug("latency scrape failed", "worker", w.url, "err", err)
						return
					}
					now := last{histTotals(fams, ttftHistogram), histTotals(fams, tpotHistogram)}
					mu.Lock()
					before, seen := prev[w]
					prev[w] = now
					mu.Unlock()
					if !seen {
						return
					}
					o := policy.Observation{
						TTFT: meanSince(now.ttft, before.ttft), TPOT: meanSince(now.tpot, before.tpot),
						Load: float64(w.Load() + w.queue.Load()),
					}
					if o.TTFT > 0 || o.TPOT > 0 {
						for _, id := range w.ids {
							obs.Observe(id, o)
						}
					}
				})
			}
		}
		wg.Wait()
	}
	scrapeAll(ctx)
	tick(ctx, secs(r.cfg.LoadCheckIntervalSecs), scrapeAll)
}

// meanSince is the mean of the observations between two cumulative
// totals (0 when there were none, or the worker restarted).
func meanSince(now, before histMean) time.Duration {
	n := now.count - before.count
	if n <= 0 {
		return 0
	}
	return time.Duration((now.sum - before.sum) / n * float64(time.Second))
}

// observes reports whether some pool's policy learns from latencies.
func (r *Router) observes() bool { return r.policyNeeds().Latency }

// sloCollector exports predicted_latency's SLO decisions.
type sloCollector struct {
	r *Router
	d *prometheus.Desc
}

func newSLOCollector(r *Router) *sloCollector {
	return &sloCollector{r: r, d: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "slo_decisions_total"),
		"Requests with an SLO by predicted_latency's decision: met (a worker was predicted to meet it), missed (none was; sent to the best anyway), refused, unscored (no latency observed yet).",
		[]string{"pool", "outcome"}, nil)}
}

func (c *sloCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }

func (c *sloCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.r.pools {
		s, ok := p.policy.(interface{ Stats() policy.SLOStats })
		if !ok {
			continue
		}
		st := s.Stats()
		for outcome, v := range map[string]uint64{"met": st.Met, "missed": st.Missed, "refused": st.Refused, "unscored": st.Unscored} {
			ch <- prometheus.MustNewConstMetric(c.d, prometheus.CounterValue, float64(v), p.name, outcome)
		}
	}
}

// httpOnlyPolicy names what of the router's policies learns from workers
// over the network in a way the virtual clock does not model yet: latency
// scrapes ("" when nothing does). KV event streams it does model: the
// deployment delivers the engines' batches (ApplyKVEvents).
func (r *Router) httpOnlyPolicy() string {
	if r.observes() {
		return "policy " + r.cfg.Policy + " learns latencies from the workers' /metrics"
	}
	return ""
}
