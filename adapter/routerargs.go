package adapter

import (
	"strconv"

	"github.com/autoinfer/autoinfer/router"
)

// routerArgs renders cfg as vllm-router's current command-line flags, for a
// router launched as an external binary (host and port are added by the
// launcher). Every setting vllm-router knows is passed explicitly in its
// spelling, so the external router runs the configuration the ledger
// records rather than its own defaults; autoinfer-only settings are passed
// only when they differ from autoinfer's defaults, so a stock vllm-router
// accepts the command line of a spec that does not use them. List flags are
// repeated, one value each: clap appends them, and so does pflag.
func routerArgs(cfg router.Config) []string {
	def := router.DefaultConfig()
	var a []string
	str := func(flag, v string) {
		if v != "" {
			a = append(a, flag, v)
		}
	}
	num := func(flag string, v float64) { a = append(a, flag, strconv.FormatFloat(v, 'f', -1, 64)) }
	integer := func(flag string, v int) { a = append(a, flag, strconv.Itoa(v)) }
	flag := func(name string, on bool) {
		if on {
			a = append(a, name)
		}
	}
	if cfg.PDDisaggregation {
		flag("--vllm-pd-disaggregation", true)
		for _, u := range cfg.PrefillURLs {
			str("--prefill", u)
		}
		for _, u := range cfg.DecodeURLs {
			str("--decode", u)
		}
		str("--prefill-policy", cfg.PrefillPolicy)
		str("--decode-policy", cfg.DecodePolicy)
		str("--kv-connector", cfg.KVConnector)
	} else {
		for _, u := range cfg.WorkerURLs {
			str("--worker-urls", u)
		}
		str("--policy", cfg.Policy)
	}
	num("--cache-threshold", cfg.CacheThreshold)
	integer("--balance-abs-threshold", cfg.BalanceAbsThreshold)
	num("--balance-rel-threshold", cfg.BalanceRelThreshold)
	integer("--eviction-interval", cfg.EvictionIntervalSecs)
	integer("--max-tree-size", cfg.MaxTreeSize)
	integer("--retry-max-retries", cfg.Retry.MaxRetries)
	integer("--retry-initial-backoff-ms", cfg.Retry.InitialBackoffMs)
	integer("--retry-max-backoff-ms", cfg.Retry.MaxBackoffMs)
	num("--retry-backoff-multiplier", cfg.Retry.BackoffMultiplier)
	num("--retry-jitter-factor", cfg.Retry.JitterFactor)
	flag("--disable-retries", cfg.Retry.Disable)
	integer("--cb-failure-threshold", cfg.CircuitBreaker.FailureThreshold)
	integer("--cb-success-threshold", cfg.CircuitBreaker.SuccessThreshold)
	num("--cb-timeout-duration-secs", cfg.CircuitBreaker.TimeoutDurationSecs)
	flag("--disable-circuit-breaker", cfg.CircuitBreaker.Disable)
	num("--health-check-interval-secs", cfg.HealthCheck.IntervalSecs)
	num("--health-check-timeout-secs", cfg.HealthCheck.TimeoutSecs)
	integer("--health-failure-threshold", cfg.HealthCheck.FailureThreshold)
	integer("--health-success-threshold", cfg.HealthCheck.SuccessThreshold)
	str("--health-check-endpoint", cfg.HealthCheck.Endpoint)
	integer("--max-concurrent-requests", cfg.MaxConcurrentRequests)
	a = append(a, "--max-payload-size", strconv.FormatInt(cfg.MaxPayloadSize, 10))
	num("--request-timeout-secs", cfg.RequestTimeoutSecs)
	for _, h := range cfg.RequestIDHeaders {
		str("--request-id-headers", h)
	}
	if cfg.IntraNodeDataParallelSize > 1 {
		integer("--intra-node-data-parallel-size", cfg.IntraNodeDataParallelSize)
	}
	// autoinfer-only settings. vllm-router's CLI fixes its queue at 100
	// requests and 60 s, autoinfer's defaults.
	if cfg.QueueSize != def.QueueSize {
		integer("--queue-size", cfg.QueueSize)
	}
	if cfg.QueueTimeoutSecs != def.QueueTimeoutSecs {
		num("--queue-timeout-secs", cfg.QueueTimeoutSecs)
	}
	if cfg.LoadSignal != def.LoadSignal {
		str("--load-signal", cfg.LoadSignal)
	}
	if cfg.LoadCheckIntervalSecs != def.LoadCheckIntervalSecs {
		num("--load-check-interval-secs", cfg.LoadCheckIntervalSecs)
	}
	for _, s := range cfg.KVEvents {
		str("--kv-events", s.String())
	}
	for _, s := range cfg.Scorers {
		str("--scorer", s.String())
	}
	if cfg.PDDisaggregation {
		if cfg.RoutingThreshold != def.RoutingThreshold {
			integer("--routing-threshold", cfg.RoutingThreshold)
		}
		if cfg.PrefillTimeoutSecs != def.PrefillTimeoutSecs {
			num("--prefill-timeout-secs", cfg.PrefillTimeoutSecs)
		}
		flag("--pd-fallback-local", cfg.PDFallbackLocal)
	}
	return a
}
