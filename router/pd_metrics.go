package router

import "github.com/prometheus/client_golang/prometheus"

// pdMetrics are vllm-router's vllm_router_pd_* series plus one autoinfer
// addition (local_prefill_total), registered only in PD mode.
type pdMetrics struct {
	requests       *prometheus.CounterVec   // route
	duration       *prometheus.HistogramVec // route
	prefillReqs    *prometheus.CounterVec   // worker
	decodeReqs     *prometheus.CounterVec   // worker
	errors         *prometheus.CounterVec   // error_type
	prefillErrors  *prometheus.CounterVec   // worker
	decodeErrors   *prometheus.CounterVec   // worker
	streamErrors   *prometheus.CounterVec   // worker
	localPrefill   *prometheus.CounterVec   // reason
	prefillSeconds prometheus.Histogram
}

// Reasons a PD request was prefilled by its decode worker.
const (
	localBelowThreshold = "below_threshold" // estimated prompt under routing_threshold
	localPrefillFailed  = "prefill_failed"  // every prefill attempt failed and pd_fallback_local is on
	localNoKVParams     = "no_kv_params"    // the prefill engine returned no kv_transfer_params (EOS on its token)
)

func newPDMetrics(reg prometheus.Registerer) (*pdMetrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	m := &pdMetrics{
		requests: counter("pd_requests_total", "Requests on a disaggregated route (completions, chat), by route.", "route"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "pd_request_duration_seconds",
			Help: "Time from receiving a disaggregated-route request to the end of its response.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"route"}),
		prefillReqs:   counter("pd_prefill_requests_total", "Prefill-leg attempts sent to each prefill worker.", "worker"),
		decodeReqs:    counter("pd_decode_requests_total", "Decode-leg attempts sent to each decode worker.", "worker"),
		errors:        counter("pd_errors_total", "Disaggregated-route requests that ended in an error the router reported, by error type.", "error_type"),
		prefillErrors: counter("pd_prefill_errors_total", "Prefill-leg attempts that failed (transport error, 5xx, 429/503/408/504, timeout).", "worker"),
		decodeErrors:  counter("pd_decode_errors_total", "Decode-leg attempts that failed before their answer reached the client.", "worker"),
		streamErrors:  counter("pd_stream_errors_total", "Decode answers the worker broke off mid-stream.", "worker"),
		localPrefill:  counter("pd_local_prefill_total", "Disaggregated-route requests prefilled by their decode worker, by reason.", "reason"),
		prefillSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "pd_prefill_duration_seconds",
			Help: "Successful prefill legs, retries included.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.prefillReqs, m.decodeReqs, m.errors,
		m.prefillErrors, m.decodeErrors, m.streamErrors, m.localPrefill, m.prefillSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
