package cmd

import (
	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router"
)

// bindRouterFlags binds vllm-router's flag names (where the concept exists)
// to the fields of cfg. It is called twice when --config is given: once on
// the command (defaults) and once on the file's values, so explicitly given
// flags can be replayed over the file.
func bindRouterFlags(fs *pflag.FlagSet, c *router.Config) {
	fs.SetNormalizeFunc(routerFlagAliases)
	fs.StringVar(&c.Host, "host", c.Host, "address to listen on")
	fs.IntVar(&c.Port, "port", c.Port, "port to listen on (0: any free port)")
	fs.StringSliceVar(&c.WorkerURLs, "worker-urls", c.WorkerURLs, "worker base URLs (repeat, comma-separate, or list after the flag)")
	fs.StringVar(&c.Policy, "policy", c.Policy, "random, round_robin, power_of_two, consistent_hash, cache_aware, least_loaded, precise_prefix, predicted_latency or weighted")
	fs.Var(scorerFlag(&c.Scorers), "scorer", "weighted: a scorer and its weight, NAME=WEIGHT (repeat; names: prefix, precise_prefix, load, predicted_latency)")
	fs.Var(kvEventsFlag(&c.KVEvents), "kv-events", "precise_prefix: a worker's KV event stream, WORKER_URL=tcp://HOST:PORT[,tcp://REPLAY_HOST:PORT[,TOPIC]] (repeat per worker)")

	fs.Float64Var(&c.CacheThreshold, "cache-threshold", c.CacheThreshold, "cache_aware: prefix match rate above which the matching worker wins")
	fs.IntVar(&c.BalanceAbsThreshold, "balance-abs-threshold", c.BalanceAbsThreshold, "cache_aware: imbalance needs max-min load above this")
	fs.Float64Var(&c.BalanceRelThreshold, "balance-rel-threshold", c.BalanceRelThreshold, "cache_aware: imbalance needs max load above min × this")
	fs.IntVar(&c.EvictionIntervalSecs, "eviction-interval", c.EvictionIntervalSecs, "cache_aware: seconds between tree evictions (alias --eviction-interval-secs)")
	fs.IntVar(&c.MaxTreeSize, "max-tree-size", c.MaxTreeSize, "cache_aware: bytes the tree may hold in total over all workers (text, nodes, entries)")
	fs.StringVar(&c.LoadSignal, "load-signal", c.LoadSignal, "power_of_two/least_loaded signal: in_flight or in_flight+queue")
	fs.Float64Var(&c.LoadCheckIntervalSecs, "load-check-interval-secs", c.LoadCheckIntervalSecs, "seconds between queue-depth scrapes (in_flight+queue)")
	fs.IntVar(&c.IntraNodeDataParallelSize, "intra-node-data-parallel-size", c.IntraNodeDataParallelSize, "data-parallel ranks per worker URL")

	fs.IntVar(&c.Retry.MaxRetries, "retry-max-retries", c.Retry.MaxRetries, "attempts per request, the first included")
	fs.IntVar(&c.Retry.InitialBackoffMs, "retry-initial-backoff-ms", c.Retry.InitialBackoffMs, "backoff before the first retry")
	fs.IntVar(&c.Retry.MaxBackoffMs, "retry-max-backoff-ms", c.Retry.MaxBackoffMs, "backoff cap")
	fs.Float64Var(&c.Retry.BackoffMultiplier, "retry-backoff-multiplier", c.Retry.BackoffMultiplier, "backoff growth per retry")
	fs.Float64Var(&c.Retry.JitterFactor, "retry-jitter-factor", c.Retry.JitterFactor, "± fraction of random jitter on each backoff")
	fs.BoolVar(&c.Retry.Disable, "disable-retries", c.Retry.Disable, "send each request once")

	fs.IntVar(&c.CircuitBreaker.FailureThreshold, "cb-failure-threshold", c.CircuitBreaker.FailureThreshold, "consecutive failures that open a circuit")
	fs.IntVar(&c.CircuitBreaker.SuccessThreshold, "cb-success-threshold", c.CircuitBreaker.SuccessThreshold, "half-open successes that close it")
	fs.Float64Var(&c.CircuitBreaker.TimeoutDurationSecs, "cb-timeout-duration-secs", c.CircuitBreaker.TimeoutDurationSecs, "seconds a circuit stays open")
	fs.BoolVar(&c.CircuitBreaker.Disable, "disable-circuit-breaker", c.CircuitBreaker.Disable, "never open circuits")

	fs.Float64Var(&c.HealthCheck.IntervalSecs, "health-check-interval-secs", c.HealthCheck.IntervalSecs, "seconds between health probes")
	fs.Float64Var(&c.HealthCheck.TimeoutSecs, "health-check-timeout-secs", c.HealthCheck.TimeoutSecs, "health probe timeout")
	fs.IntVar(&c.HealthCheck.FailureThreshold, "health-failure-threshold", c.HealthCheck.FailureThreshold, "failed probes that mark a worker unhealthy")
	fs.IntVar(&c.HealthCheck.SuccessThreshold, "health-success-threshold", c.HealthCheck.SuccessThreshold, "passed probes that mark it healthy again")
	fs.StringVar(&c.HealthCheck.Endpoint, "health-check-endpoint", c.HealthCheck.Endpoint, "path probed on each worker")

	fs.BoolVar(&c.PDDisaggregation, "vllm-pd-disaggregation", c.PDDisaggregation, "prefill/decode mode: --prefill and --decode workers instead of --worker-urls (alias --pd-disaggregation)")
	fs.StringSliceVar(&c.PrefillURLs, "prefill", c.PrefillURLs, "PD: prefill worker URL (repeat or comma-separate); vllm-router's optional bootstrap port or none after it is accepted and unused")
	fs.StringSliceVar(&c.DecodeURLs, "decode", c.DecodeURLs, "PD: decode worker URL (repeat or comma-separate)")
	fs.StringVar(&c.PrefillPolicy, "prefill-policy", c.PrefillPolicy, "PD: policy choosing prefill workers (any --policy value)")
	fs.StringVar(&c.DecodePolicy, "decode-policy", c.DecodePolicy, "PD: policy choosing decode workers (any --policy value)")
	fs.StringVar(&c.KVConnector, "kv-connector", c.KVConnector, "PD: nixl (kv_transfer_params) or nccl (peer addresses in the request id)")
	fs.IntVar(&c.RoutingThreshold, "routing-threshold", c.RoutingThreshold, "PD: prompts estimated below this many tokens skip the prefill hop (0: always disaggregate)")
	fs.Float64Var(&c.PrefillTimeoutSecs, "prefill-timeout-secs", c.PrefillTimeoutSecs, "PD: bound on one prefill attempt (0: 60 s)")
	fs.BoolVar(&c.PDFallbackLocal, "pd-fallback-local", c.PDFallbackLocal, "PD: when every prefill attempt fails, let the decode worker prefill instead of failing")

	fs.IntVar(&c.MaxConcurrentRequests, "max-concurrent-requests", c.MaxConcurrentRequests, "hard limit on requests being routed (0: none)")
	fs.IntVar(&c.QueueSize, "queue-size", c.QueueSize, "requests that may wait for a slot (FIFO)")
	fs.Float64Var(&c.QueueTimeoutSecs, "queue-timeout-secs", c.QueueTimeoutSecs, "longest wait for a slot")
	fs.Int64Var(&c.MaxPayloadSize, "max-payload-size", c.MaxPayloadSize, "largest request body in bytes")
	fs.Float64Var(&c.RequestTimeoutSecs, "request-timeout-secs", c.RequestTimeoutSecs, "longest time for one request, retries included")
	fs.StringSliceVar(&c.RequestIDHeaders, "request-id-headers", c.RequestIDHeaders, "headers a request id is read from, first present wins (default X-Request-Id, X-Correlation-Id, X-Trace-Id, Request-Id)")

	s := &c.SecurityConfig
	fs.StringVar(&s.APIKeyEnv, "api-key-env", s.APIKeyEnv, "environment variable holding the key clients must send (Authorization: Bearer)")
	fs.StringVar(&s.AdminAPIKeyEnv, "admin-api-key-env", s.AdminAPIKeyEnv, "environment variable holding the admin key; admin routes are off without one")
	fs.StringVar(&s.WorkerAPIKeyEnv, "worker-api-key-env", s.WorkerAPIKeyEnv, "environment variable holding the key the router sends workers")
	fs.BoolVar(&s.ForwardClientAuth, "forward-client-auth", s.ForwardClientAuth, "forward clients' Authorization, Cookie and API-key headers to workers")
	fs.BoolVar(&s.KeepUnderscoreHeaders, "keep-underscore-headers", s.KeepUnderscoreHeaders, "forward header fields whose names contain '_' (dropped by default, as nginx does)")
	fs.StringSliceVar(&s.PassthroughRoutes, "passthrough-routes", s.PassthroughRoutes, "other paths passed to workers: exact paths or /prefix/* (replaces the default list)")
	fs.Int64Var(&s.MaxBodyMemory, "max-body-memory", s.MaxBodyMemory, "request body bytes held at once over all requests")
	fs.IntVar(&s.MaxRunIDs, "max-run-ids", s.MaxRunIDs, "X-Run-ID values with live per-run series (least recently used evicted)")
	fs.Float64Var(&s.ReadHeaderTimeoutSecs, "read-header-timeout-secs", s.ReadHeaderTimeoutSecs, "bound on reading a request's headers")
	fs.Float64Var(&s.BodyReadTimeoutSecs, "body-read-timeout-secs", s.BodyReadTimeoutSecs, "bound on reading a request's body")
	fs.Float64Var(&s.WriteIdleTimeoutSecs, "write-idle-timeout-secs", s.WriteIdleTimeoutSecs, "bound on one write to a client that stopped reading (never cuts a live stream)")
	fs.Float64Var(&s.IdleTimeoutSecs, "idle-timeout-secs", s.IdleTimeoutSecs, "close keep-alive connections idle this long")
	fs.Float64Var(&s.MinBodyRate, "min-body-rate", s.MinBodyRate, "bytes/s a request body must average after its first 10 s, else 408 (0: no minimum)")
	fs.IntVar(&s.MaxConnections, "max-connections", s.MaxConnections, "client connections open at once; one more gets 503 (0: no cap)")
}

// bindRouterSecretFlags binds the flags that carry keys themselves. They
// are not part of router.Config, so no key reaches a file or a ledger row;
// a key on the command line is visible to other local users (ps), which
// the *-env flags avoid.
func bindRouterSecretFlags(fs *pflag.FlagSet, s *router.Secrets) {
	fs.StringVar(&s.APIKey, "api-key", "", "key clients must send as Authorization: Bearer (prefer --api-key-env)")
	fs.StringVar(&s.AdminAPIKey, "admin-api-key", "", "admin key for /workers changes (prefer --admin-api-key-env)")
	fs.StringVar(&s.WorkerAPIKey, "worker-api-key", "", "key the router sends workers (prefer --worker-api-key-env)")
}

// replayFlags copies the flags explicitly set on from onto the same-named
// flags of to.
func replayFlags(from, to *pflag.FlagSet) error {
	var err error
	from.Visit(func(f *pflag.Flag) {
		dst := to.Lookup(f.Name)
		if dst == nil || err != nil {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			err = dst.Value.(pflag.SliceValue).Replace(sv.GetSlice())
			return
		}
		err = dst.Value.Set(f.Value.String())
	})
	return err
}
