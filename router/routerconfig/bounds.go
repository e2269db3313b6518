package routerconfig

import (
	"fmt"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Upper bounds of the router's counts, sizes and durations: far above any
// deployment's, low enough that a typo (or a hostile spec or flag) fails
// validation instead of making the router try to hold it. docs/router.md
// lists them.
const (
	MaxWorkerURLs     = 1024      // worker_urls, prefill, decode (each)
	MaxThreshold      = 1_000_000 // balance thresholds, breaker and health thresholds, routing_threshold
	MaxTreeSize       = 64 << 30  // max_tree_size (bytes)
	MaxParallelSize   = 1024      // intra_node_data_parallel_size
	MaxRetries        = 100       // retry.max_retries
	MaxBackoffMs      = 3_600_000 // retry backoffs (one hour)
	MaxMultiplier     = 100.0     // retry.backoff_multiplier
	MaxRequests       = 1_000_000 // max_concurrent_requests, queue_size, max_run_ids
	MaxPayloadSize    = 4 << 30   // max_payload_size (bytes)
	MaxBodyMemory     = 1 << 40   // max_body_memory (bytes)
	MaxSecs           = 86_400.0  // every *_secs setting but request_timeout_secs (one day)
	MaxRequestSecs    = 604_800.0 // request_timeout_secs (seven days)
	MaxPassthrough    = 256       // passthrough_routes entries
	maxRouteLen       = 1024      // one passthrough route
	maxEnvNameLen     = 256       // *_env names
	maxEndpointLength = 1024      // health_check.endpoint
)

// checkBounds records every setting over its upper bound; the lower bounds
// and the rules between settings are Validate's.
func (c Config) checkBounds(l *field.Errors) {
	l.Check(
		field.MaxItems("router.worker_urls", len(c.WorkerURLs), MaxWorkerURLs),
		field.MaxItems("router.prefill", len(c.PrefillURLs), MaxWorkerURLs),
		field.MaxItems("router.decode", len(c.DecodeURLs), MaxWorkerURLs),
		field.AtMost("router.balance_abs_threshold", c.BalanceAbsThreshold, MaxThreshold),
		field.AtMost("router.balance_rel_threshold", c.BalanceRelThreshold, MaxThreshold),
		field.AtMost("router.eviction_interval_secs", c.EvictionIntervalSecs, MaxSecs),
		field.MaxBytes("router.max_tree_size", c.MaxTreeSize, MaxTreeSize),
		field.AtMost("router.load_check_interval_secs", c.LoadCheckIntervalSecs, MaxSecs),
		field.AtMost("router.intra_node_data_parallel_size", c.IntraNodeDataParallelSize, MaxParallelSize),
		field.AtMost("router.routing_threshold", c.RoutingThreshold, MaxThreshold),
		field.AtMost("router.prefill_timeout_secs", c.PrefillTimeoutSecs, MaxSecs),

		field.AtMost("router.retry.max_retries", c.Retry.MaxRetries, MaxRetries),
		field.AtMost("router.retry.initial_backoff_ms", c.Retry.InitialBackoffMs, MaxBackoffMs),
		field.AtMost("router.retry.max_backoff_ms", c.Retry.MaxBackoffMs, MaxBackoffMs),
		field.AtMost("router.retry.backoff_multiplier", c.Retry.BackoffMultiplier, MaxMultiplier),
		field.AtMost("router.circuit_breaker.failure_threshold", c.CircuitBreaker.FailureThreshold, MaxThreshold),
		field.AtMost("router.circuit_breaker.success_threshold", c.CircuitBreaker.SuccessThreshold, MaxThreshold),
		field.AtMost("router.circuit_breaker.timeout_duration_secs", c.CircuitBreaker.TimeoutDurationSecs, MaxSecs),
		field.AtMost("router.health_check.interval_secs", c.HealthCheck.IntervalSecs, MaxSecs),
		field.AtMost("router.health_check.timeout_secs", c.HealthCheck.TimeoutSecs, MaxSecs),
		field.AtMost("router.health_check.failure_threshold", c.HealthCheck.FailureThreshold, MaxThreshold),
		field.AtMost("router.health_check.success_threshold", c.HealthCheck.SuccessThreshold, MaxThreshold),
		field.MaxLen("router.health_check.endpoint", c.HealthCheck.Endpoint, maxEndpointLength),

		field.AtMost("router.max_concurrent_requests", c.MaxConcurrentRequests, MaxRequests),
		field.AtMost("router.queue_size", c.QueueSize, MaxRequests),
		field.AtMost("router.queue_timeout_secs", c.QueueTimeoutSecs, MaxSecs),
		field.MaxBytes("router.max_payload_size", c.MaxPayloadSize, MaxPayloadSize),
		field.AtMost("router.request_timeout_secs", c.RequestTimeoutSecs, MaxRequestSecs),
	)
	s := c.SecurityConfig
	l.Check(
		field.MaxLen("router.api_key_env", s.APIKeyEnv, maxEnvNameLen),
		field.MaxLen("router.admin_api_key_env", s.AdminAPIKeyEnv, maxEnvNameLen),
		field.MaxLen("router.worker_api_key_env", s.WorkerAPIKeyEnv, maxEnvNameLen),
		field.MaxItems("router.passthrough_routes", len(s.PassthroughRoutes), MaxPassthrough),
		field.MaxBytes("router.max_body_memory", s.MaxBodyMemory, MaxBodyMemory),
		field.AtMost("router.max_run_ids", s.MaxRunIDs, MaxRequests),
		field.AtMost("router.read_header_timeout_secs", s.ReadHeaderTimeoutSecs, MaxSecs),
		field.AtMost("router.body_read_timeout_secs", s.BodyReadTimeoutSecs, MaxSecs),
		field.AtMost("router.write_idle_timeout_secs", s.WriteIdleTimeoutSecs, MaxSecs),
		field.AtMost("router.idle_timeout_secs", s.IdleTimeoutSecs, MaxSecs),
		field.AtMost("router.min_body_rate", s.MinBodyRate, float64(MaxPayloadSize)),
		field.AtMost("router.max_connections", s.MaxConnections, MaxRequests),
	)
	for i, r := range s.PassthroughRoutes {
		l.Check(field.MaxLen(fmt.Sprintf("router.passthrough_routes[%d]", i), r, maxRouteLen))
	}
}
