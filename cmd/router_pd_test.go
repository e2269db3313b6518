package cmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/scrape"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

func TestRouterPDFlags(t *testing.T) {
	flagCfg := router.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	bindRouterFlags(fs, &flagCfg)
	err := fs.Parse([]string{"--pd-disaggregation", "--prefill", "http://127.0.0.1:1", "--prefill", "http://127.0.0.1:2",
		"--decode", "http://127.0.0.1:3,http://127.0.0.1:4", "--prefill-policy", "least_loaded", "--decode-policy", "power_of_two",
		"--kv-connector", "nccl", "--routing-threshold", "512", "--prefill-timeout-secs", "2.5", "--pd-fallback-local"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, defaulted, err := resolveRouterConfig(fs, flagCfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(defaulted) != 0 {
		t.Errorf("explicit PD flags were defaulted: %v", defaulted)
	}
	if !cfg.PDDisaggregation || cfg.PrefillPolicy != "least_loaded" || cfg.DecodePolicy != "power_of_two" ||
		cfg.KVConnector != "nccl" || cfg.RoutingThreshold != 512 || cfg.PrefillTimeoutSecs != 2.5 || !cfg.PDFallbackLocal ||
		!slices.Equal(cfg.PrefillURLs, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}) ||
		!slices.Equal(cfg.DecodeURLs, []string{"http://127.0.0.1:3", "http://127.0.0.1:4"}) {
		t.Fatalf("PD flags resolved to %+v", cfg)
	}
}

func TestRouterPDBadInputExitsTwo(t *testing.T) {
	for name, args := range map[string][]string{
		"bad connector":      {"router", "serve", "--pd-disaggregation", "--kv-connector", "rdma", "--prefill", "http://127.0.0.1:1", "--decode", "http://127.0.0.1:2", "--prefill-policy", "random", "--decode-policy", "random"},
		"no decode workers":  {"router", "serve", "--pd-disaggregation", "--kv-connector", "nixl", "--prefill", "http://127.0.0.1:1", "--prefill-policy", "random", "--decode-policy", "random"},
		"pd flag without pd": {"router", "serve", "--prefill-policy", "random"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := Main(args, io.Discard, &stderr); code != ExitUsage {
				t.Fatalf("exit %d (%s), want %d", code, stderr.String(), ExitUsage)
			}
		})
	}
}

// Issue 35, acceptance 6: vllm-router's own PD command line, without a
// connector flag, serves a PD completion: the connector defaults to NIXL
// as in vllm-router, and the policies to --policy when not given.
func TestRouterServeVLLMRouterPDCommandLine(t *testing.T) {
	p := simtest.Start(t, sim.Options{Role: sim.RolePrefill})
	d := simtest.Start(t, sim.Options{Role: sim.RoleDecode})
	rt := serveCLI(t, nil, "--port", "0", "--vllm-pd-disaggregation", "--prefill", p, "8998", "--decode", d,
		"--prefill-policy", "round_robin", "--decode-policy", "round_robin")
	expect(t, "PD completion", send(t, http.MethodPost, rt.URL+"/v1/completions",
		`{"model":"`+simtest.DefaultModel+`","prompt":"hello there","max_tokens":4}`), http.StatusOK, `"text_completion"`)
	if n := prefillRequests(t, p); n != 1 {
		t.Errorf("the prefill worker served %v requests, want 1 (the completion's prefill leg)", n)
	}
	expect(t, "the resolved connector", send(t, http.MethodGet, rt.URL+"/get_server_info", ""), http.StatusOK, `"kv_connector":"nixl"`)

	flagCfg := router.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	bindRouterFlags(fs, &flagCfg)
	if err := fs.Parse([]string{"--vllm-pd-disaggregation", "--prefill", p, "--decode", d}); err != nil {
		t.Fatal(err)
	}
	cfg, defaulted, err := resolveRouterConfig(fs, flagCfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KVConnector != "nixl" || cfg.PrefillPolicy != cfg.Policy || cfg.DecodePolicy != cfg.Policy || len(defaulted) != 6 {
		t.Errorf("defaults: connector %q, policies %q/%q (policy %q), logged %v", cfg.KVConnector, cfg.PrefillPolicy, cfg.DecodePolicy, cfg.Policy, defaulted)
	}
}

// prefillRequests reads how many requests a prefill engine finished.
func prefillRequests(t *testing.T, worker string) float64 {
	t.Helper()
	fams, err := scrape.Fetch(context.Background(), http.DefaultClient, worker+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return fams.Sum("vllm:request_success_total", nil)
}
