package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveKeyed runs `router serve` with args and returns its URL; it stops at
// the end of the test.
func serveKeyed(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	cmd := newRouterCmd()
	cmd.SetArgs(append([]string{"serve", "--port", "0", "--policy", "round_robin", "--log-level", "error"}, args...))
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v", err)
	}
	var ev struct {
		URL    string
		APIKey bool `json:"api_key"`
		Admin  bool
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil || !ev.APIKey || !ev.Admin {
		t.Fatalf("listening line %q (%v): want api_key and admin true", line, err)
	}
	return ev.URL
}

func post(t *testing.T, url, body, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestRouterServeKeys(t *testing.T) {
	t.Setenv("AUTOINFER_TEST_ROUTER_KEY", "client-key")
	base := serveKeyed(t, "--api-key-env", "AUTOINFER_TEST_ROUTER_KEY", "--admin-api-key", "admin-key", "--worker-urls", httpServer(t))
	for _, c := range []struct {
		path, body, key string
		want            int
	}{
		{"/v1/completions", `{"prompt":"hi"}`, "", 401},
		{"/v1/completions", `{"prompt":"hi"}`, "wrong", 401},
		{"/v1/completions", `{"prompt":"hi"}`, "client-key", 200},
		{"/workers", `{"url":"http://127.0.0.1:9"}`, "client-key", 401},
		{"/workers", `{"url":"http://127.0.0.1:9"}`, "admin-key", 201},
	} {
		if got := post(t, base+c.path, c.body, c.key); got != c.want {
			t.Errorf("POST %s with key %q → %d, want %d", c.path, c.key, got, c.want)
		}
	}
}

func TestRouterServeKeyErrorsExitTwo(t *testing.T) {
	for name, c := range map[string]struct {
		args    []string
		want    string
		notEcho string
	}{
		"unset variable":              {[]string{"--api-key-env", "AUTOINFER_TEST_SURELY_UNSET"}, "router.api_key_env", ""},
		"key instead of a name":       {[]string{"--admin-api-key-env", "sk-live.s3cr3t"}, "router.admin_api_key_env", "s3cr3t"},
		"credentials in a worker URL": {[]string{"--worker-urls", "http://user:hunter2@127.0.0.1:1"}, "router.worker_urls[0]", "hunter2"},
		"query in a worker URL":       {[]string{"--worker-urls", "http://127.0.0.1:1/?x=1"}, "must not have a query", ""},
		"bad pass-through pattern":    {[]string{"--passthrough-routes", "admin/*"}, "router.passthrough_routes[0]", ""},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"router", "serve", "--port", "0"}, c.args...)
			if code := Main(args, io.Discard, &stderr); code != ExitUsage {
				t.Fatalf("exit %d (%s), want %d", code, stderr.String(), ExitUsage)
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q does not name %q", stderr.String(), c.want)
			}
			if c.notEcho != "" && strings.Contains(stderr.String(), c.notEcho) {
				t.Errorf("stderr echoes the secret: %q", stderr.String())
			}
		})
	}
}
