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
	var configPath, logLevel string
	cmd := &cobra.Command{
		Use:   "serve [WORKER_URL...]",
		Short: "Serve the router until SIGINT or SIGTERM",
		Example: `  autoinfer router serve --worker-urls http://127.0.0.1:8001 http://127.0.0.1:8002 --policy round_robin
  autoinfer router serve --config router.yaml --port 0
  autoinfer router serve --pd-disaggregation --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200 \
      --prefill-policy round_robin --decode-policy least_loaded --kv-connector nixl --routing-threshold 512`,
		RunE: func(cmd *cobra.Command, args []string) error {
			resolved, err := resolveRouterConfig(cmd.Flags(), cfg, configPath, args)
			if err != nil {
				return err
			}
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			return serveRouter(cmd, resolved, secrets, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})))
		},
	}
	fs := cmd.Flags()
	bindRouterFlags(fs, &cfg)
	bindRouterSecretFlags(fs, &secrets)
	fs.StringVar(&configPath, "config", "", "YAML file with a router config (unknown keys are errors); flags given explicitly override it")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// resolveRouterConfig layers defaults, then the --config file, then the
// flags given explicitly; positional arguments are more worker URLs (as
// vllm-router's space-separated --worker-urls list).
func resolveRouterConfig(fs *pflag.FlagSet, flagCfg router.Config, path string, args []string) (router.Config, error) {
	cfg := flagCfg
	if path != "" {
		var err error
		if cfg, err = loadRouterConfig(path); err != nil {
			return cfg, err
		}
		replay := pflag.NewFlagSet("replay", pflag.ContinueOnError)
		bindRouterFlags(replay, &cfg)
		if err := replayFlags(fs, replay); err != nil {
			return cfg, usageErr("applying flags over %s: %v", path, err)
		}
	}
	cfg.WorkerURLs = append(cfg.WorkerURLs, args...)
	if err := cfg.Validate(); err != nil {
		return cfg, usageErr("invalid router config:\n%v", err)
	}
	return cfg, nil
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
func serveRouter(cmd *cobra.Command, cfg router.Config, secrets router.Secrets, log *slog.Logger) error {
	r, err := router.New(cfg, router.WithLogger(log), router.WithSecrets(secrets))
	if err != nil {
		return usageErr("%v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("router listen: %w", err))
	}
	ev := map[string]any{
		"event": "listening", "url": "http://" + ln.Addr().String(), "policy": cfg.Policy, "workers": len(cfg.WorkerURLs),
		"api_key": secrets.APIKey != "" || cfg.APIKeyEnv != "", "admin": secrets.AdminAPIKey != "" || cfg.AdminAPIKeyEnv != "",
	}
	if cfg.PDDisaggregation {
		ev["prefill"], ev["decode"], ev["prefill_policy"], ev["decode_policy"] = len(cfg.PrefillURLs), len(cfg.DecodeURLs), cfg.PrefillPolicy, cfg.DecodePolicy
	}
	line, _ := json.Marshal(ev)
	fmt.Fprintln(cmd.OutOrStdout(), string(line))
	if err := r.Serve(cmd.Context(), ln); err != nil {
		return withCode(ExitInfra, err)
	}
	return nil
}
