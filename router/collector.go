package router

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/policy"
)

// stateCollector exports the router's live state at scrape time.
type stateCollector struct {
	r *Router

	activeWorkers, health, load, running, queue, cbState, treeSize, treeBytes,
	maxLoad, minLoad, signal, admitted, waiting,
	bodyBytes, bodyPeak, bodyWaiting, runIDs *prometheus.Desc
}

func newStateCollector(r *Router) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, nil)
	}
	return &stateCollector{
		r:             r,
		activeWorkers: d("active_workers", "Workers that are healthy with a circuit that admits traffic."),
		health:        d("worker_health", "1 if the worker passes its health checks.", "worker"),
		load:          d("worker_load", "The load signal the policies see (in-flight, plus scraped queue under in_flight+queue).", "worker"),
		running:       d("running_requests", "Exact in-flight attempts bound to the worker.", "worker"),
		queue:         d("worker_queue_depth", "vllm:num_requests_waiting last scraped from the worker (in_flight+queue only).", "worker"),
		cbState:       d("cb_state", "Circuit state: 0 closed, 1 open, 2 half-open.", "worker"),
		treeSize:      d("tree_size", "Characters held by the cache_aware tree for the target.", "worker"),
		treeBytes:     d("tree_bytes", "Bytes the cache_aware tree holds (text, nodes and entries), the quantity max_tree_size bounds.", "pool"),
		maxLoad:       d("max_load", "Highest exact in-flight count over workers."),
		minLoad:       d("min_load", "Lowest exact in-flight count over workers."),
		signal:        d("load_signal", "1 for the load signal power_of_two and least_loaded use.", "signal"),
		admitted:      d("in_flight_requests", "Client requests admitted by backpressure and being routed."),
		waiting:       d("queued_requests", "Client requests waiting in the backpressure queue."),
		bodyBytes:     d("body_buffer_bytes", "Request body bytes reserved now (bounded by max_body_memory)."),
		bodyPeak:      d("body_buffer_peak_bytes", "Most request body bytes ever reserved at once."),
		bodyWaiting:   d("body_buffer_waiting_requests", "Requests waiting for body memory."),
		runIDs:        d("run_ids", "X-Run-ID values with live per-run series (bounded by max_run_ids)."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.activeWorkers, c.health, c.load, c.running, c.queue, c.cbState,
		c.treeSize, c.treeBytes, c.maxLoad, c.minLoad, c.signal, c.admitted, c.waiting, c.bodyBytes, c.bodyPeak, c.bodyWaiting, c.runIDs} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	withQueue := c.r.cfg.LoadSignal == LoadSignalInFlightQueue
	active := 0
	var lo, hi int64
	first := true
	for _, p := range c.r.pools {
		for _, w := range p.Workers() {
			cb := w.breaker.State()
			if w.Healthy() && cb != BreakerOpen {
				active++
			}
			inflight, q := w.Load(), w.queue.Load()
			signal := inflight
			if withQueue {
				signal += q
				gauge(c.queue, float64(q), w.url)
			}
			gauge(c.health, b2f(w.Healthy()), w.url)
			gauge(c.running, float64(inflight), w.url)
			gauge(c.load, float64(signal), w.url)
			gauge(c.cbState, float64(cb), w.url)
			if first {
				lo, hi, first = inflight, inflight, false
			}
			lo, hi = min(lo, inflight), max(hi, inflight)
		}
		if s, ok := p.policy.(policy.Sizer); ok {
			for id, n := range s.Sizes() {
				gauge(c.treeSize, float64(n), id)
			}
		}
		if h, ok := p.policy.(policy.MemoryHolder); ok {
			gauge(c.treeBytes, float64(h.HeldBytes()), p.name)
		}
	}
	gauge(c.activeWorkers, float64(active))
	gauge(c.maxLoad, float64(hi))
	gauge(c.minLoad, float64(lo))
	gauge(c.signal, 1, c.r.cfg.LoadSignal)
	gauge(c.admitted, float64(c.r.limiter.admitted.Load()))
	gauge(c.waiting, float64(c.r.limiter.waiting.Load()))
	gauge(c.bodyBytes, float64(c.r.bodies.held.Load()))
	gauge(c.bodyPeak, float64(c.r.bodies.peak.Load()))
	gauge(c.bodyWaiting, float64(c.r.bodies.waiting.Load()))
	gauge(c.runIDs, float64(c.r.runs.live()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
