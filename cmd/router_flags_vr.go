package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// routerFlagAliases maps the spellings autoinfer used before vllm-router's
// current ones (and vllm-router's own aliases) to the current names.
func routerFlagAliases(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	switch name {
	case "eviction-interval-secs":
		name = "eviction-interval"
	case "pd-disaggregation":
		name = "vllm-pd-disaggregation"
	case "runtime":
		name = "backend"
	}
	return pflag.NormalizedName(name)
}

// serveOptions are `router serve` settings that do not change what the
// router measures, so they stay out of router.Config and the ledger.
type serveOptions struct {
	configPath string
	logLevel   string
	logDir     string
	promHost   string
	promPort   int
	backend    string
	cbWindow   float64
	// bootstrapPorts are the ports given after --prefill URLs.
	bootstrapPorts []string
	// pdDefaults are the PD settings filled as vllm-router's (logged once).
	pdDefaults []any
}

// vllm-router's defaults for the settings serveOptions holds.
const (
	defaultPrometheusHost = "127.0.0.1"
	defaultPrometheusPort = 29000
	defaultCBWindowSecs   = 120
)

func bindServeFlags(fs *pflag.FlagSet, o *serveOptions) {
	fs.StringVar(&o.configPath, "config", "", "YAML file with a router config (unknown keys are errors); flags given explicitly override it")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logDir, "log-dir", "", "also write the log to autoinfer-router.log in this directory (created if missing)")
	fs.StringVar(&o.promHost, "prometheus-host", defaultPrometheusHost, "address of a separate /metrics listener (started when --prometheus-port or --prometheus-host is given; /metrics stays on the main port too)")
	fs.IntVar(&o.promPort, "prometheus-port", defaultPrometheusPort, "port of the separate /metrics listener (0: any free port)")
	fs.StringVar(&o.backend, "backend", "vllm", "worker kind: only vllm (OpenAI-compatible vLLM servers) is supported (alias --runtime)")
	fs.Float64Var(&o.cbWindow, "cb-window-duration-secs", defaultCBWindowSecs, "accepted for vllm-router compatibility; like vllm-router's, it has no effect")
}

// validate checks the options that can be checked before the router
// starts; every problem names its flag.
func (o *serveOptions) validate() error {
	var errs []string
	if o.backend != "vllm" {
		errs = append(errs, fmt.Sprintf("--backend: only vllm is supported (autoinfer routes OpenAI-compatible vLLM servers), got %q", o.backend))
	}
	if o.promPort < 0 || o.promPort > 65535 {
		errs = append(errs, fmt.Sprintf("--prometheus-port: must be 0..65535, got %d", o.promPort))
	}
	if o.cbWindow <= 0 {
		errs = append(errs, fmt.Sprintf("--cb-window-duration-secs: must be > 0, got %v", o.cbWindow))
	}
	if len(errs) > 0 {
		return usageErr("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// splitPrefillArgs rewrites vllm-router's `--prefill URL [BOOTSTRAP_PORT|none]`
// into `--prefill=URL` and returns the ports it took out. A port is the
// argument after the URL when it is a number in 0..65535 or "none", as
// vllm-router reads it. Arguments after "--" are left alone.
func splitPrefillArgs(args []string) (out, ports []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), ports, nil
		}
		var url string
		switch {
		case a == "--prefill":
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return nil, nil, usageErr("--prefill: needs a URL after it")
			}
			i++
			url = args[i]
		case strings.HasPrefix(a, "--prefill="):
			url = strings.TrimPrefix(a, "--prefill=")
		default:
			out = append(out, a)
			continue
		}
		out = append(out, "--prefill="+url)
		if i+1 < len(args) && isBootstrapPort(args[i+1]) {
			i++
			ports = append(ports, args[i])
		}
	}
	return out, ports, nil
}

func isBootstrapPort(s string) bool {
	if strings.EqualFold(s, "none") {
		return true
	}
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n <= 65535
}
