package router

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the router's counters and histograms, under vllm-router's
// vllm_router_ names. Gauges that mirror live state (loads, health,
// circuits, tree sizes) are read at scrape time by stateCollector instead,
// so they can never drift from the state they describe.
type metrics struct {
	requests         *prometheus.CounterVec   // route
	duration         *prometheus.HistogramVec // route
	errors           *prometheus.CounterVec   // route, error_type
	retries          *prometheus.CounterVec   // route
	retriesExhausted *prometheus.CounterVec   // route
	backoff          *prometheus.HistogramVec // attempt
	cbTransitions    *prometheus.CounterVec   // worker, from, to
	cbOutcomes       *prometheus.CounterVec   // worker, outcome
	processed        *prometheus.CounterVec   // worker
	decisions        *prometheus.CounterVec   // policy, worker
	cacheHits        prometheus.Counter
	cacheMisses      prometheus.Counter
	lbEvents         prometheus.Counter
	runRequests      *prometheus.CounterVec // run_id
	runPrompt        *prometheus.CounterVec // run_id
	runCompletion    *prometheus.CounterVec // run_id
}

const ns = "vllm_router"

func newMetrics(reg prometheus.Registerer) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	m := &metrics{
		requests: counter("requests_total", "Requests received, by route.", "route"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Time from receiving a request to the end of its response.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"route"}),
		errors:           counter("request_errors_total", "Requests that ended in an error the router reported, by error type.", "route", "error_type"),
		retries:          counter("retries_total", "Attempts after the first.", "route"),
		retriesExhausted: counter("retries_exhausted_total", "Requests that failed after using every attempt.", "route"),
		backoff: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "retry_backoff_duration_seconds",
			Help: "Backoff slept before a retry.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 13)}, []string{"attempt"}),
		cbTransitions: counter("cb_state_transitions_total", "Circuit breaker transitions.", "worker", "from", "to"),
		cbOutcomes:    counter("cb_outcomes_total", "Attempt outcomes fed to circuit breakers.", "worker", "outcome"),
		processed:     counter("processed_requests_total", "Attempts sent to each worker.", "worker"),
		decisions:     counter("policy_decisions_total", "Policy choices, by policy and chosen target.", "policy", "worker"),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_hits_total",
			Help: "cache_aware decisions sent to the worker with the longest prefix match."}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_misses_total",
			Help: "cache_aware decisions whose match was at or below the threshold."}),
		lbEvents: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "load_balancing_events_total",
			Help: "cache_aware decisions overridden by the load-imbalance gate."}),
		runRequests:   counter("run_requests_total", "Requests carrying X-Run-ID, by run.", "run_id"),
		runPrompt:     counter("run_prompt_tokens_total", "Prompt tokens from response usage, by run.", "run_id"),
		runCompletion: counter("run_completion_tokens_total", "Completion tokens from response usage, by run.", "run_id"),
	}
	reg.MustRegister(m.requests, m.duration, m.errors, m.retries, m.retriesExhausted, m.backoff, m.cbTransitions,
		m.cbOutcomes, m.processed, m.decisions, m.cacheHits, m.cacheMisses, m.lbEvents, m.runRequests, m.runPrompt, m.runCompletion)
	return m
}
