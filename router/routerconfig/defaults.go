package routerconfig

import "github.com/autoinfer/autoinfer/router/policy"

// Defaults. docs/router.md tabulates them next to vllm-router's library and
// CLI defaults and explains every difference.
const (
	DefaultHost                  = "127.0.0.1"
	DefaultPort                  = 30000
	DefaultPolicy                = policy.CacheAware
	DefaultCacheThreshold        = 0.3
	DefaultBalanceAbsThreshold   = 64
	DefaultBalanceRelThreshold   = 1.5
	DefaultEvictionIntervalSecs  = 120
	DefaultMaxTreeSize           = 1 << 26
	DefaultLoadSignal            = LoadSignalInFlight
	DefaultLoadCheckIntervalSecs = 1
	DefaultMaxConcurrentRequests = 32768
	DefaultQueueSize             = 100
	DefaultQueueTimeoutSecs      = 60
	DefaultMaxPayloadSize        = 512 << 20
	DefaultRequestTimeoutSecs    = 1800
)

// Load signals power_of_two and least_loaded compare.
const (
	LoadSignalInFlight      = "in_flight"
	LoadSignalInFlightQueue = "in_flight+queue"
)

// Default returns the documented defaults with no workers.
func Default() Config {
	return Config{
		Host:                      DefaultHost,
		Port:                      DefaultPort,
		Policy:                    DefaultPolicy,
		CacheThreshold:            DefaultCacheThreshold,
		BalanceAbsThreshold:       DefaultBalanceAbsThreshold,
		BalanceRelThreshold:       DefaultBalanceRelThreshold,
		EvictionIntervalSecs:      DefaultEvictionIntervalSecs,
		MaxTreeSize:               DefaultMaxTreeSize,
		LoadSignal:                DefaultLoadSignal,
		LoadCheckIntervalSecs:     DefaultLoadCheckIntervalSecs,
		IntraNodeDataParallelSize: 1,
		Retry: RetryConfig{
			MaxRetries:        5,
			InitialBackoffMs:  50,
			MaxBackoffMs:      30000,
			BackoffMultiplier: 1.5,
			JitterFactor:      0.2,
		},
		CircuitBreaker: CircuitBreakerConfig{
			FailureThreshold:    10,
			SuccessThreshold:    3,
			TimeoutDurationSecs: 60,
		},
		HealthCheck: HealthCheckConfig{
			IntervalSecs:     10,
			TimeoutSecs:      5,
			FailureThreshold: 3,
			SuccessThreshold: 2,
			Endpoint:         "/health",
		},
		MaxConcurrentRequests: DefaultMaxConcurrentRequests,
		QueueSize:             DefaultQueueSize,
		QueueTimeoutSecs:      DefaultQueueTimeoutSecs,
		MaxPayloadSize:        DefaultMaxPayloadSize,
		RequestTimeoutSecs:    DefaultRequestTimeoutSecs,
		SecurityConfig:        DefaultSecurityConfig(),
	}
}
