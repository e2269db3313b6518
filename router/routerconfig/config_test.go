package routerconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/trials/field"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestValidateNamesYAMLKeys(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"policy", func(c *Config) { c.Policy = "fastest" }, "router.policy: must be one of random, round_robin, power_of_two, consistent_hash, cache_aware, least_loaded"},
		{"empty policy", func(c *Config) { c.Policy = "" }, "router.policy: required"},
		{"worker url", func(c *Config) { c.WorkerURLs = []string{"not a url"} }, "router.worker_urls[0]: must be an http(s) URL"},
		{"duplicate workers", func(c *Config) { c.WorkerURLs = []string{"http://a:1", "http://a:1"} }, "router.worker_urls: must not list the same URL twice"},
		{"threshold", func(c *Config) { c.CacheThreshold = 1.5 }, "router.cache_threshold: must be ≤ 1"},
		{"retries", func(c *Config) { c.Retry.MaxRetries = 0 }, "router.retry.max_retries: must be ≥ 1"},
		{"backoff order", func(c *Config) { c.Retry.MaxBackoffMs = 10 }, "router.retry.max_backoff_ms: must be ≥ initial_backoff_ms"},
		{"jitter", func(c *Config) { c.Retry.JitterFactor = 2 }, "router.retry.jitter_factor: must be ≤ 1"},
		{"cb", func(c *Config) { c.CircuitBreaker.TimeoutDurationSecs = 0 }, "router.circuit_breaker.timeout_duration_secs: must be > 0"},
		{"health endpoint", func(c *Config) { c.HealthCheck.Endpoint = "health" }, "router.health_check.endpoint: must start with \"/\""},
		{"health timeout", func(c *Config) { c.HealthCheck.TimeoutSecs = 20 }, "router.health_check.timeout_secs: must not exceed"},
		{"load signal", func(c *Config) { c.LoadSignal = "queue" }, "router.load_signal: must be one of in_flight, in_flight+queue"},
		{"dp", func(c *Config) { c.IntraNodeDataParallelSize = 0 }, "router.intra_node_data_parallel_size: must be ≥ 1"},
		{"payload", func(c *Config) { c.MaxPayloadSize = 0 }, "router.max_payload_size: must be ≥ 1"},
		{"pd needs policies", func(c *Config) { c.PDDisaggregation = true }, "router.prefill_policy: required when pd_disaggregation is true"},
		{"pd needs connector", func(c *Config) { c.PDDisaggregation = true }, "router.kv_connector: required when pd_disaggregation is true"},
		{"not pd", func(c *Config) { c.DecodePolicy = "random" }, "router.decode_policy: only allowed when pd_disaggregation is true"},
		{"pd needs prefill workers", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "random", "random"
			c.DecodeURLs = []string{"http://127.0.0.1:2"}
		}, "router.prefill: at least one prefill worker URL required"},
		{"pd needs decode workers", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "random", "random"
			c.PrefillURLs = []string{"http://127.0.0.1:1"}
		}, "router.decode: at least one decode worker URL required"},
		{"pd threshold outside pd", func(c *Config) { c.RoutingThreshold = 10 }, "router.routing_threshold: only allowed when pd_disaggregation is true"},
		{"pd prefill url", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nccl", "random", "random"
			c.PrefillURLs, c.DecodeURLs = []string{"nope"}, []string{"http://127.0.0.1:2"}
		}, "router.prefill[0]: must be an http(s) URL"},
		{"pd worker in both pools", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "random", "random"
			c.PrefillURLs, c.DecodeURLs = []string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:2", "http://127.0.0.1:1"}
		}, `router.decode: "http://127.0.0.1:1" is also a prefill worker`},
		{"connector", func(c *Config) {
			c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "rdma", "random", "random"
		}, "router.kv_connector: must be one of nixl, nccl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, "router.") {
				t.Fatalf("error %v carries no FieldError with a router.* key", err)
			}
		})
	}
}

func TestValidPDConfig(t *testing.T) {
	c := Default()
	c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "round_robin", "least_loaded"
	c.PrefillURLs, c.DecodeURLs = []string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:2"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Validate reports every problem at once, not the first one.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Policy, c.Port, c.Retry.JitterFactor, c.HealthCheck.Endpoint = "fastest", -1, 2, "x"
	var paths []string
	for _, e := range field.Flatten(c.Validate()) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		paths = append(paths, fe.Path)
	}
	want := []string{"router.port", "router.policy", "router.retry.jitter_factor", "router.health_check.endpoint"}
	if !slices.Equal(paths, want) {
		t.Errorf("problems at %v, want %v", paths, want)
	}
}
