package cmd

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router"
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
	cfg, err := resolveRouterConfig(fs, flagCfg, "", nil)
	if err != nil {
		t.Fatal(err)
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
		"no connector":       {"router", "serve", "--pd-disaggregation", "--prefill", "http://127.0.0.1:1", "--decode", "http://127.0.0.1:2", "--prefill-policy", "random", "--decode-policy", "random"},
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
