package routerconfig

import (
	"maps"
	"slices"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/trials/field"
)

// FieldError is one invalid setting; its Path is the setting's YAML path
// under router: ("router.retry.max_retries"), the name users write in specs
// and files.
type FieldError = field.Error

// Validate checks every field and the rules between fields. The error joins
// one *FieldError per problem.
func (c Config) Validate() error {
	var l field.Errors
	if c.Host != "" {
		l.Check(field.Host("router.host", c.Host))
	}
	l.Check(field.Between("router.port", c.Port, 0, 65535))
	l.Check(checkPolicy("router.policy", c.Policy, true))

	l.Check(
		field.Between("router.cache_threshold", c.CacheThreshold, 0, 1),
		field.AtLeast("router.balance_abs_threshold", c.BalanceAbsThreshold, 0),
		field.AtLeast("router.balance_rel_threshold", c.BalanceRelThreshold, 1),
		field.AtLeast("router.eviction_interval_secs", c.EvictionIntervalSecs, 1),
		field.AtLeast("router.max_tree_size", c.MaxTreeSize, 1),
	)
	if c.LoadSignal == "" {
		l.Add("router.load_signal", "required")
	} else {
		l.Check(field.OneOf("router.load_signal", c.LoadSignal, LoadSignalInFlight, LoadSignalInFlightQueue))
	}
	l.Check(field.Above("router.load_check_interval_secs", c.LoadCheckIntervalSecs, 0))
	l.Check(field.AtLeast("router.intra_node_data_parallel_size", c.IntraNodeDataParallelSize, 1))

	l.Check(field.HTTPURLs("router.worker_urls", c.WorkerURLs)...)
	l.Check(field.UniqueURLs("router.worker_urls", c.WorkerURLs))
	c.validatePD(&l)
	c.validateKVEvents(&l)
	c.validateScorers(&l)

	l.Nest("router.retry", c.Retry.Validate())
	l.Nest("router.circuit_breaker", c.CircuitBreaker.Validate())
	l.Nest("router.health_check", c.HealthCheck.Validate())

	l.Check(
		field.AtLeast("router.max_concurrent_requests", c.MaxConcurrentRequests, 0),
		field.AtLeast("router.queue_size", c.QueueSize, 0),
		field.Above("router.queue_timeout_secs", c.QueueTimeoutSecs, 0),
		field.AtLeast("router.max_payload_size", c.MaxPayloadSize, 1),
		field.Above("router.request_timeout_secs", c.RequestTimeoutSecs, 0),
	)
	c.validateSecurity(&l)
	c.validateRequestIDHeaders(&l)
	c.checkBounds(&l)
	return l.Err()
}

// validatePD checks the prefill/decode settings: required with
// pd_disaggregation, refused without it.
func (c Config) validatePD(l *field.Errors) {
	l.Check(field.HTTPURLs("router.prefill", c.PrefillURLs)...)
	l.Check(field.UniqueURLs("router.prefill", c.PrefillURLs))
	l.Check(field.HTTPURLs("router.decode", c.DecodeURLs)...)
	l.Check(field.UniqueURLs("router.decode", c.DecodeURLs))
	l.Check(
		checkPolicy("router.prefill_policy", c.PrefillPolicy, false),
		checkPolicy("router.decode_policy", c.DecodePolicy, false),
		field.AtLeast("router.routing_threshold", c.RoutingThreshold, 0),
		field.AtLeast("router.prefill_timeout_secs", c.PrefillTimeoutSecs, 0),
	)
	if c.KVConnector != "" {
		l.Check(field.OneOf("router.kv_connector", c.KVConnector, "nixl", "nccl"))
	}
	if !c.PDDisaggregation {
		set := map[string]bool{
			"kv_connector": c.KVConnector != "", "prefill_policy": c.PrefillPolicy != "", "decode_policy": c.DecodePolicy != "",
			"prefill": len(c.PrefillURLs) > 0, "decode": len(c.DecodeURLs) > 0, "routing_threshold": c.RoutingThreshold != 0,
			"prefill_timeout_secs": c.PrefillTimeoutSecs != 0, "pd_fallback_local": c.PDFallbackLocal,
		}
		for _, key := range slices.Sorted(maps.Keys(set)) {
			if set[key] {
				l.Add("router."+key, "only allowed when pd_disaggregation is true")
			}
		}
		return
	}
	for _, f := range []struct{ key, v string }{
		{"kv_connector", c.KVConnector}, {"prefill_policy", c.PrefillPolicy}, {"decode_policy", c.DecodePolicy},
	} {
		if f.v == "" {
			l.Add("router."+f.key, "required when pd_disaggregation is true")
		}
	}
	if len(c.WorkerURLs) > 0 {
		l.Add("router.worker_urls", "must be empty when pd_disaggregation is true (use prefill and decode)")
	}
	if len(c.PrefillURLs) == 0 {
		l.Add("router.prefill", "at least one prefill worker URL required when pd_disaggregation is true")
	}
	if len(c.DecodeURLs) == 0 {
		l.Add("router.decode", "at least one decode worker URL required when pd_disaggregation is true")
	}
	// A worker has one role; in both pools its per-worker metrics would be
	// exported twice (breaking /metrics) and its loads merged.
	for _, u := range c.DecodeURLs {
		if slices.Contains(c.PrefillURLs, u) {
			l.Add("router.decode", "%q is also a prefill worker; a worker serves one role", u)
		}
	}
}

// checkPolicy wants a registered policy name; an empty name is an error
// only when required.
func checkPolicy(path, name string, required bool) error {
	if name == "" && !required {
		return nil
	}
	if name == "" {
		return field.Errorf(path, "required")
	}
	return field.OneOf(path, name, policy.Names()...)
}

// Validate checks the retry settings; paths are relative to retry:.
func (r RetryConfig) Validate() error {
	var l field.Errors
	l.Check(
		field.AtLeast("max_retries", r.MaxRetries, 1),
		field.AtLeast("initial_backoff_ms", r.InitialBackoffMs, 0),
		field.AtLeast("backoff_multiplier", r.BackoffMultiplier, 1),
		field.Between("jitter_factor", r.JitterFactor, 0, 1),
	)
	if r.MaxBackoffMs < r.InitialBackoffMs {
		l.Add("max_backoff_ms", "must be ≥ initial_backoff_ms (got %d)", r.MaxBackoffMs)
	}
	return l.Err()
}

// Validate checks the circuit breaker settings; paths are relative to
// circuit_breaker:.
func (b CircuitBreakerConfig) Validate() error {
	var l field.Errors
	l.Check(
		field.AtLeast("failure_threshold", b.FailureThreshold, 1),
		field.AtLeast("success_threshold", b.SuccessThreshold, 1),
		field.Above("timeout_duration_secs", b.TimeoutDurationSecs, 0),
	)
	return l.Err()
}

// Validate checks the health check settings; paths are relative to
// health_check:.
func (h HealthCheckConfig) Validate() error {
	var l field.Errors
	l.Check(
		field.Above("interval_secs", h.IntervalSecs, 0),
		field.Above("timeout_secs", h.TimeoutSecs, 0),
		field.AtLeast("failure_threshold", h.FailureThreshold, 1),
		field.AtLeast("success_threshold", h.SuccessThreshold, 1),
	)
	if h.Endpoint == "" {
		l.Add("endpoint", "required")
	} else {
		l.Check(field.AbsPath("endpoint", h.Endpoint))
	}
	if h.TimeoutSecs > h.IntervalSecs && h.IntervalSecs > 0 {
		l.Add("timeout_secs", "must not exceed health_check.interval_secs (%g)", h.IntervalSecs)
	}
	return l.Err()
}
