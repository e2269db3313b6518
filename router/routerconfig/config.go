package routerconfig

// Config is the router's whole configuration: the CLI builds it from flags,
// trial specs embed it under `router:`, and the ledger stores it (as JSON
// with a hash) on every row, so two rows that differ only by policy are never
// confused. YAML/JSON keys are vllm-router's CLI flag names in snake_case.
type Config struct {
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	Port int    `yaml:"port,omitempty" json:"port,omitempty"`

	// WorkerURLs are the collocated workers (ignored in PD mode).
	WorkerURLs []string `yaml:"worker_urls,omitempty" json:"worker_urls,omitempty"`
	Policy     string   `yaml:"policy,omitempty" json:"policy,omitempty"`

	// cache_aware parameters.
	CacheThreshold       float64 `yaml:"cache_threshold,omitempty" json:"cache_threshold,omitempty"`
	BalanceAbsThreshold  int     `yaml:"balance_abs_threshold,omitempty" json:"balance_abs_threshold,omitempty"`
	BalanceRelThreshold  float64 `yaml:"balance_rel_threshold,omitempty" json:"balance_rel_threshold,omitempty"`
	EvictionIntervalSecs int     `yaml:"eviction_interval_secs,omitempty" json:"eviction_interval_secs,omitempty"`
	// MaxTreeSize caps the bytes the cache_aware tree really holds (text and
	// node overhead) in total, over every worker and model (vllm-router caps
	// the characters of each worker separately).
	MaxTreeSize int `yaml:"max_tree_size,omitempty" json:"max_tree_size,omitempty"`
	// KVEvents are the workers' KV event streams precise_prefix follows
	// (kvevents.go).
	KVEvents []KVEventsSource `yaml:"kv_events,omitempty" json:"kv_events,omitempty"`
	// Scorers are the weighted policy's terms (scorers.go; none: its
	// defaults, precise_prefix and load equally).
	Scorers []Scorer `yaml:"scorers,omitempty" json:"scorers,omitempty"`

	// LoadSignal is what power_of_two and least_loaded compare: "in_flight"
	// (the router's exact counts) or "in_flight+queue" (blended with
	// vllm:num_requests_waiting scraped from workers).
	LoadSignal string `yaml:"load_signal,omitempty" json:"load_signal,omitempty"`
	// LoadCheckIntervalSecs is how often workers' /metrics are scraped for
	// the queue part of the "in_flight+queue" signal.
	LoadCheckIntervalSecs float64 `yaml:"load_check_interval_secs,omitempty" json:"load_check_interval_secs,omitempty"`

	// Prefill/decode disaggregation.
	PDDisaggregation   bool     `yaml:"pd_disaggregation,omitempty" json:"pd_disaggregation,omitempty"`
	PrefillURLs        []string `yaml:"prefill,omitempty" json:"prefill,omitempty"`
	DecodeURLs         []string `yaml:"decode,omitempty" json:"decode,omitempty"`
	PrefillPolicy      string   `yaml:"prefill_policy,omitempty" json:"prefill_policy,omitempty"`
	DecodePolicy       string   `yaml:"decode_policy,omitempty" json:"decode_policy,omitempty"`
	KVConnector        string   `yaml:"kv_connector,omitempty" json:"kv_connector,omitempty"`
	RoutingThreshold   int      `yaml:"routing_threshold,omitempty" json:"routing_threshold,omitempty"`
	PrefillTimeoutSecs float64  `yaml:"prefill_timeout_secs,omitempty" json:"prefill_timeout_secs,omitempty"`
	// PDFallbackLocal lets the decode worker prefill locally when every
	// prefill attempt failed, instead of failing the request.
	PDFallbackLocal bool `yaml:"pd_fallback_local,omitempty" json:"pd_fallback_local,omitempty"`

	// IntraNodeDataParallelSize > 1 addresses each worker as that many ranks
	// (header X-data-parallel-rank), as vllm-router does.
	// Loads are tracked per (worker, rank); GET /get_loads and Loads() sum
	// them per worker URL, GET /workers lists each rank.
	IntraNodeDataParallelSize int `yaml:"intra_node_data_parallel_size,omitempty" json:"intra_node_data_parallel_size,omitempty"`

	Retry          RetryConfig          `yaml:"retry,omitempty" json:"retry"`
	CircuitBreaker CircuitBreakerConfig `yaml:"circuit_breaker,omitempty" json:"circuit_breaker"`
	HealthCheck    HealthCheckConfig    `yaml:"health_check,omitempty" json:"health_check"`

	// Backpressure: a hard in-flight limit (0 = unlimited) with a bounded
	// FIFO queue (0 = refuse at once when the limit is reached).
	MaxConcurrentRequests int     `yaml:"max_concurrent_requests,omitempty" json:"max_concurrent_requests,omitempty"`
	QueueSize             int     `yaml:"queue_size,omitempty" json:"queue_size,omitempty"`
	QueueTimeoutSecs      float64 `yaml:"queue_timeout_secs,omitempty" json:"queue_timeout_secs,omitempty"`

	MaxPayloadSize int64 `yaml:"max_payload_size,omitempty" json:"max_payload_size,omitempty"`
	// RequestTimeoutSecs bounds one client request end to end, retries included.
	RequestTimeoutSecs float64 `yaml:"request_timeout_secs,omitempty" json:"request_timeout_secs,omitempty"`
	// RequestIDHeaders are the headers a request id is read from, first
	// present wins (empty: DefaultRequestIDHeaders), as vllm-router's
	// --request-id-headers.
	RequestIDHeaders []string `yaml:"request_id_headers,omitempty" json:"request_id_headers,omitempty"`

	SecurityConfig `yaml:",inline"` // security.go: keys, exposure, resource bounds
}

// RetryConfig sets how failed attempts are retried: each re-selects a
// worker and backs off exponentially with jitter.
type RetryConfig struct {
	// MaxRetries counts total attempts, the first included (as vllm-router).
	MaxRetries        int     `yaml:"max_retries,omitempty" json:"max_retries"`
	InitialBackoffMs  int     `yaml:"initial_backoff_ms,omitempty" json:"initial_backoff_ms"`
	MaxBackoffMs      int     `yaml:"max_backoff_ms,omitempty" json:"max_backoff_ms"`
	BackoffMultiplier float64 `yaml:"backoff_multiplier,omitempty" json:"backoff_multiplier"`
	JitterFactor      float64 `yaml:"jitter_factor,omitempty" json:"jitter_factor"`
	Disable           bool    `yaml:"disable,omitempty" json:"disable,omitempty"`
}

// CircuitBreakerConfig sets each worker's breaker: Closed → Open after
// FailureThreshold consecutive failures, Open → HalfOpen after
// TimeoutDurationSecs, HalfOpen → Closed after SuccessThreshold
// consecutive successes.
type CircuitBreakerConfig struct {
	FailureThreshold    int     `yaml:"failure_threshold,omitempty" json:"failure_threshold"`
	SuccessThreshold    int     `yaml:"success_threshold,omitempty" json:"success_threshold"`
	TimeoutDurationSecs float64 `yaml:"timeout_duration_secs,omitempty" json:"timeout_duration_secs"`
	Disable             bool    `yaml:"disable,omitempty" json:"disable,omitempty"`
}

// HealthCheckConfig sets the active GET probes of every worker.
type HealthCheckConfig struct {
	IntervalSecs     float64 `yaml:"interval_secs,omitempty" json:"interval_secs"`
	TimeoutSecs      float64 `yaml:"timeout_secs,omitempty" json:"timeout_secs"`
	FailureThreshold int     `yaml:"failure_threshold,omitempty" json:"failure_threshold"`
	SuccessThreshold int     `yaml:"success_threshold,omitempty" json:"success_threshold"`
	Endpoint         string  `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
}
