package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/router"
)

func newRouterServeCmd() *cobra.Command {
	cfg := router.DefaultConfig()
	var secrets router.Secrets
	var opts serveOptions
	cmd := &cobra.Command{
		Use:   "serve [WORKER_URL...]",
		Short: "Serve the router until SIGINT or SIGTERM",
		Long: `Serve the router. It takes vllm-router's flags where autoinfer has the concept
(docs/router.md, "vllm-router parity"), so a vllm-router command line runs
unchanged, including --prefill URL [BOOTSTRAP_PORT].`,
		Example: `  autoinfer router serve --worker-urls http://127.0.0.1:8001 http://127.0.0.1:8002 --policy round_robin
  autoinfer router serve --config router.yaml --port 0
  autoinfer router serve --vllm-pd-disaggregation --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200 \
      --prefill-policy round_robin --decode-policy least_loaded --kv-connector nixl --routing-threshold 512`,
		// Flags are parsed in RunE: vllm-router's --prefill takes an
		// optional second value, which pflag cannot express.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, raw []string) error {
			args, ports, err := splitPrefillArgs(raw)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			if err := fs.Parse(args); err != nil {
				return withCode(ExitUsage, err)
			}
			if help, _ := fs.GetBool("help"); help {
				return cmd.Help()
			}
			opts.bootstrapPorts = ports
			resolved, pdDefaults, err := resolveRouterConfig(fs, cfg, opts.configPath, fs.Args())
			if err != nil {
				return err
			}
			opts.pdDefaults = pdDefaults
			if err := opts.validate(); err != nil {
				return err
			}
			level, err := parseLogLevel(opts.logLevel)
			if err != nil {
				return err
			}
			log, closeLog, err := routerLogger(cmd.ErrOrStderr(), opts.logDir, level)
			if err != nil {
				return err
			}
			defer closeLog()
			return serveRouter(cmd, resolved, secrets, opts, fs, log)
		},
	}
	fs := cmd.Flags()
	bindRouterFlags(fs, &cfg)
	bindRouterSecretFlags(fs, &secrets)
	bindServeFlags(fs, &opts)
	return cmd
}

// resolveRouterConfig layers defaults, then the --config file, then the
// flags given explicitly; positional arguments are more worker URLs (as
// vllm-router's space-separated --worker-urls list). In PD mode it fills
// what vllm-router does not require and returns what it filled
// (vllmRouterPDDefaults).
func resolveRouterConfig(fs *pflag.FlagSet, flagCfg router.Config, path string, args []string) (router.Config, []any, error) {
	cfg := flagCfg
	if path != "" {
		var err error
		if cfg, err = loadRouterConfig(path); err != nil {
			return cfg, nil, err
		}
		replay := pflag.NewFlagSet("replay", pflag.ContinueOnError)
		bindRouterFlags(replay, &cfg)
		if err := replayFlags(fs, replay); err != nil {
			return cfg, nil, usageErr("applying flags over %s: %v", path, err)
		}
	}
	cfg.WorkerURLs = append(cfg.WorkerURLs, args...)
	pdDefaults := vllmRouterPDDefaults(&cfg)
	if err := cfg.Validate(); err != nil {
		return cfg, nil, usageErr("invalid router config:\n%v", err)
	}
	return cfg, pdDefaults, nil
}

// loadRouterConfig strictly decodes a YAML router config over the defaults.
func loadRouterConfig(path string) (router.Config, error) {
	cfg := router.DefaultConfig()
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, usageErr("reading router config: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, usageErr("router config %s: %v", path, err)
	}
	return cfg, nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, usageErr("--log-level: must be debug, info, warn or error (got %q)", s)
	}
	return l, nil
}

// serveRouter listens, prints one JSON line with the URL, and serves until
// the command's context is cancelled (SIGINT/SIGTERM).
func serveRouter(cmd *cobra.Command, cfg router.Config, secrets router.Secrets, opts serveOptions, fs *pflag.FlagSet, log *slog.Logger) error {
	r, err := router.New(cfg, router.WithLogger(log), router.WithSecrets(secrets))
	if err != nil {
		return usageErr("%v", err)
	}
	if len(opts.pdDefaults) > 0 {
		log.Info("PD mode settings not given, vllm-router's used", opts.pdDefaults...)
	}
	if len(opts.bootstrapPorts) > 0 {
		log.Warn("--prefill bootstrap ports are accepted and unused: vLLM's NIXL and NCCL connectors need none", "ports", opts.bootstrapPorts)
	}
	if fs.Changed("cb-window-duration-secs") {
		log.Warn("--cb-window-duration-secs has no effect (nor does it in vllm-router)")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("router listen: %w", err))
	}
	ev := map[string]any{
		"event": "listening", "url": "http://" + ln.Addr().String(), "mode": "regular", "policy": cfg.Policy, "workers": len(cfg.WorkerURLs),
		"api_key": secrets.APIKey != "" || cfg.APIKeyEnv != "", "admin": secrets.AdminAPIKey != "" || cfg.AdminAPIKeyEnv != "",
	}
	if cfg.PDDisaggregation {
		// The collocated policy is unused in PD mode: naming it would claim a setting that does not apply.
		delete(ev, "policy")
		ev["mode"], ev["workers"] = "vllm_pd", len(cfg.PrefillURLs)+len(cfg.DecodeURLs)
		ev["prefill"], ev["decode"], ev["prefill_policy"], ev["decode_policy"] = len(cfg.PrefillURLs), len(cfg.DecodeURLs), cfg.PrefillPolicy, cfg.DecodePolicy
	}
	var metricsLn net.Listener
	if fs.Changed("prometheus-port") || fs.Changed("prometheus-host") {
		if metricsLn, err = net.Listen("tcp", net.JoinHostPort(opts.promHost, strconv.Itoa(opts.promPort))); err != nil {
			ln.Close()
			return withCode(ExitInfra, fmt.Errorf("prometheus listen: %w", err))
		}
		ev["metrics_url"] = "http://" + metricsLn.Addr().String() + "/metrics"
	}
	line, _ := json.Marshal(ev)
	fmt.Fprintln(cmd.OutOrStdout(), string(line))
	if metricsLn == nil {
		if err := r.Serve(cmd.Context(), ln); err != nil {
			return withCode(ExitInfra, err)
		}
		return nil
	}
	return serveWithMetricsListener(cmd.Context(), r, ln, metricsLn)
}
