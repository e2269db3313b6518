package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router"
)

func TestRouterServeBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("policy: round_robin\nflux_capacitor: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"bad policy":    {"router", "serve", "--policy", "fastest"},
		"bad url":       {"router", "serve", "--worker-urls", "nope"},
		"unknown flag":  {"router", "serve", "--no-such-flag"},
		"unknown key":   {"router", "serve", "--config", unknown},
		"missing file":  {"router", "serve", "--config", filepath.Join(dir, "absent.yaml")},
		"bad log level": {"router", "serve", "--log-level", "loud"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := Main(args, io.Discard, &stderr); code != ExitUsage {
				t.Fatalf("exit %d (%s), want %d", code, stderr.String(), ExitUsage)
			}
		})
	}
}

func TestRouterConfigFileThenExplicitFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "router.yaml")
	yaml := "policy: cache_aware\ncache_threshold: 0.7\nworker_urls: [\"http://127.0.0.1:1\"]\nretry:\n  max_retries: 2\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	flagCfg := router.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	bindRouterFlags(fs, &flagCfg)
	if err := fs.Parse([]string{"--policy", "round_robin", "--worker-urls", "http://127.0.0.1:2,http://127.0.0.1:3", "--disable-retries"}); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := resolveRouterConfig(fs, flagCfg, path, []string{"http://127.0.0.1:4"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Policy != "round_robin" || cfg.CacheThreshold != 0.7 || cfg.Retry.MaxRetries != 2 || !cfg.Retry.Disable {
		t.Errorf("merged config %+v: want flag policy and disable-retries over file threshold and retries", cfg)
	}
	if got := strings.Join(cfg.WorkerURLs, " "); got != "http://127.0.0.1:2 http://127.0.0.1:3 http://127.0.0.1:4" {
		t.Errorf("worker urls %q", got)
	}
	if cfg.HealthCheck.Endpoint != "/health" {
		t.Errorf("file config lost defaults: %+v", cfg.HealthCheck)
	}
}

func TestRouterServeListensAndStops(t *testing.T) {
	worker := httpServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	cmd := newRouterCmd()
	cmd.SetArgs([]string{"serve", "--port", "0", "--policy", "round_robin", "--log-level", "error", "--worker-urls", worker})
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v", err)
	}
	var ev struct{ Event, URL string }
	if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != "listening" || !strings.HasPrefix(ev.URL, "http://127.0.0.1:") {
		t.Fatalf("listening line %q (%v)", line, err)
	}
	resp, err := http.Post(ev.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("through the CLI router: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}

// httpServer is a stand-in worker answering every request with {"ok":true}.
func httpServer(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
