package adapter

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/trials"
)

// vllmRouterFlags are vllm-router's current command-line flags (its clap
// CliArgs and the hand-parsed --prefill; docs/router.md's parity table).
var vllmRouterFlags = []string{"--host", "--port", "--worker-urls", "--policy", "--vllm-pd-disaggregation",
	"--vllm-discovery-address", "--prefill", "--decode", "--prefill-policy", "--decode-policy",
	"--worker-startup-timeout-secs", "--worker-startup-check-interval", "--cache-threshold", "--balance-abs-threshold",
	"--balance-rel-threshold", "--eviction-interval", "--max-tree-size", "--max-payload-size",
	"--intra-node-data-parallel-size", "--api-key", "--api-key-validation-urls", "--backend", "--log-dir", "--log-level",
	"--enable-trace", "--otlp-traces-endpoint", "--otel-sampling-ratio", "--otel-excluded-paths", "--service-discovery",
	"--selector", "--service-discovery-port", "--service-discovery-namespace", "--prefill-selector", "--decode-selector",
	"--prometheus-port", "--prometheus-host", "--request-id-headers", "--request-timeout-secs",
	"--max-concurrent-requests", "--cors-allowed-origins", "--retry-max-retries", "--retry-initial-backoff-ms",
	"--retry-max-backoff-ms", "--retry-backoff-multiplier", "--retry-jitter-factor", "--disable-retries",
	"--cb-failure-threshold", "--cb-success-threshold", "--cb-timeout-duration-secs", "--cb-window-duration-secs",
	"--disable-circuit-breaker", "--health-failure-threshold", "--health-success-threshold",
	"--health-check-timeout-secs", "--health-check-interval-secs", "--health-check-endpoint", "--enable-igw",
	"--history-backend", "--profile", "--kv-connector"}

func pdConfig(prefill, decode []string) router.Config {
	c := router.DefaultConfig()
	c.PDDisaggregation, c.KVConnector, c.PrefillPolicy, c.DecodePolicy = true, "nixl", "round_robin", "power_of_two"
	c.PrefillURLs, c.DecodeURLs = prefill, decode
	return c
}

// The builder speaks vllm-router's current CLI: for configurations without
// autoinfer-only settings every flag it emits is one of vllm-router's.
func TestRouterArgsUseOnlyVLLMRouterFlags(t *testing.T) {
	t.Parallel()
	collocated := router.DefaultConfig()
	collocated.WorkerURLs = []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}
	collocated.RequestIDHeaders = []string{"x-a", "x-b"}
	for name, cfg := range map[string]router.Config{
		"collocated": collocated,
		"pd":         pdConfig([]string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:2", "http://127.0.0.1:3"}),
	} {
		args := routerArgs(cfg)
		for _, a := range args {
			if strings.HasPrefix(a, "--") && !slices.Contains(vllmRouterFlags, a) {
				t.Errorf("%s: %s is not a vllm-router flag (args %q)", name, a, args)
			}
		}
		if name == "pd" && !slices.Contains(args, "--vllm-pd-disaggregation") {
			t.Errorf("pd: args %q lack --vllm-pd-disaggregation", args)
		}
	}
	// An autoinfer-only setting is passed under autoinfer's name.
	cfg := collocated
	cfg.QueueSize = 7
	if args := routerArgs(cfg); !slices.Contains(args, "--queue-size") {
		t.Errorf("queue_size 7 not passed: %q", args)
	}
}

// launch: external with autoinfer's own binary: the builder's vllm-router
// flags start a disaggregated router that serves a completion through real
// prefill and decode engines (the collocated case is TestRouterLaunchModes).
func TestExternalRouterRunsOnVLLMRouterFlagsPD(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	p := simtest.Start(t, sim.Options{Role: sim.RolePrefill})
	d := simtest.Start(t, sim.Options{Role: sim.RoleDecode})
	cfg := pdConfig([]string{p}, []string{d})
	cfg.Host, cfg.Port = "127.0.0.1", 0
	spec := trials.Router{Launch: trials.LaunchExternal, Binary: quote(bin) + " router serve"}
	dir := t.TempDir()
	ctx := context.Background()
	rr, err := launchRouter(ctx, spec, cfg, bin, func() (string, error) { return dir, nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rr.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	resp, err := http.Post(rr.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hello there","max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"completion_tokens":4`) {
		t.Fatalf("completion through the external PD router: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(rr.URL + "/workers")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"prefill_policy":"round_robin"`, `"decode_policy":"power_of_two"`, `"pool":"prefill"`, `"pool":"decode"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /workers lacks %s: %s", want, body)
		}
	}
}
