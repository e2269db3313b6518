package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// served is one `router serve` started by a test.
type served struct {
	URL, MetricsURL string
	stop            func()
}

// serveCLI runs `autoinfer router serve args…` in-process until the test
// ends and returns its URLs from the listening line.
func serveCLI(t *testing.T, env map[string]string, args ...string) served {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	cmd := newRouterCmd()
	cmd.SetArgs(append([]string{"serve"}, args...))
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var serveErr error
	finished := make(chan struct{})
	go func() { serveErr = cmd.ExecuteContext(ctx); pw.Close(); close(finished) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-finished:
				if serveErr != nil {
					t.Errorf("router serve returned %v", serveErr)
				}
			case <-time.After(20 * time.Second):
				t.Error("router serve did not stop after its context was cancelled")
			}
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		stop()
		t.Fatalf("no listening line (%v)", err)
	}
	var ev struct {
		Event, URL string
		MetricsURL string `json:"metrics_url"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != "listening" {
		t.Fatalf("listening line %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return served{URL: ev.URL, MetricsURL: ev.MetricsURL, stop: stop}
}

type reply struct {
	status int
	body   string
	header http.Header
}

// send makes one request with at most 10 s for the answer and does not
// follow redirects (a redirect is a failure of the route).
func send(t *testing.T, method, u, body string, header ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, string(b), resp.Header}
}

// expect checks a reply's status and that its body contains every want.
func expect(t *testing.T, what string, r reply, status int, wants ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d: %s", what, r.status, status, r.body)
		return
	}
	for _, w := range wants {
		if !strings.Contains(r.body, w) {
			t.Errorf("%s: body lacks %q: %s", what, w, r.body)
		}
	}
}

// cachedTokens sends the same prompt straight to a worker and returns how
// many of its tokens the worker's prefix cache held.
func cachedTokens(t *testing.T, worker string) int {
	t.Helper()
	r := send(t, http.MethodPost, worker+"/v1/completions", `{"prompt":"`+strings.Repeat("parity flush probe ", 20)+`","max_tokens":1}`)
	var c struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &c) != nil {
		t.Fatalf("completion on %s: %d %s", worker, r.status, r.body)
	}
	return c.Usage.Details.Cached
}

// Acceptance 1 of issue 15: `router serve` started with vllm-router's
// current spellings only (plus the admin key, which vllm-router has no
// flag for), collocated and disaggregated, answers every route of the
// parity table in docs/router.md through real HTTP to simulated engines.
// It sets an environment variable, so it does not run in parallel.
func TestRouterServeVLLMRouterParity(t *testing.T) {
	const adminEnv, adminKey = "PARITY_TEST_ADMIN_KEY", "parity-admin-key"
	admin := []string{"Authorization", "Bearer " + adminKey}
	// Every vllm-router flag autoinfer accepts, in vllm-router's spelling.
	common := []string{"--host", "127.0.0.1", "--port", "0", "--cache-threshold", "0.5", "--balance-abs-threshold", "32",
		"--balance-rel-threshold", "1.1", "--eviction-interval", "60", "--max-tree-size", "1000000",
		"--max-payload-size", "1048576", "--intra-node-data-parallel-size", "1", "--backend", "vllm",
		"--log-level", "warn", "--prometheus-host", "127.0.0.1", "--prometheus-port", "0",
		"--request-id-headers", "x-parity-id", "--request-timeout-secs", "60", "--max-concurrent-requests", "64",
		"--retry-max-retries", "3", "--retry-initial-backoff-ms", "10", "--retry-max-backoff-ms", "100",
		"--retry-backoff-multiplier", "2", "--retry-jitter-factor", "0.1", "--cb-failure-threshold", "5",
		"--cb-success-threshold", "2", "--cb-timeout-duration-secs", "30", "--cb-window-duration-secs", "120",
		"--health-failure-threshold", "3", "--health-success-threshold", "2", "--health-check-timeout-secs", "5",
		"--health-check-interval-secs", "10", "--health-check-endpoint", "/health"}

	t.Run("collocated", func(t *testing.T) {
		a, b, c := simtest.Start(t, sim.Options{}), simtest.Start(t, sim.Options{}), simtest.Start(t, sim.Options{})
		logDir := filepath.Join(t.TempDir(), "logs")
		args := append(slices.Clone(common), "--log-dir", logDir, "--policy", "round_robin", "--worker-urls", a, b)
		rt := serveCLI(t, map[string]string{adminEnv: adminKey}, append(args, "--admin-api-key-env", adminEnv)...)
		exerciseRoutes(t, rt, []string{a, b}, "regular", admin)

		// The worker set through vllm-router's admin routes.
		expect(t, "POST /workers", send(t, http.MethodPost, rt.URL+"/workers", `{"url":"`+c+`"}`, admin...), http.StatusCreated, c)
		expect(t, "GET /workers/{raw url}", send(t, http.MethodGet, rt.URL+"/workers/"+c, "", admin...), http.StatusOK, `"url":"`+c+`"`)
		expect(t, "DELETE /workers/{raw url}", send(t, http.MethodDelete, rt.URL+"/workers/"+c, "", admin...), http.StatusOK, `"removed":true`)
		expect(t, "POST /add_worker?url=", send(t, http.MethodPost, rt.URL+"/add_worker?url="+url.QueryEscape(c), "", admin...), http.StatusCreated, c)
		expect(t, "DELETE /workers/{escaped url}", send(t, http.MethodDelete, rt.URL+"/workers/"+url.PathEscape(c), "", admin...), http.StatusOK, `"removed":true`)
		expect(t, "POST /add_worker again", send(t, http.MethodPost, rt.URL+"/add_worker?url="+url.QueryEscape(c), "", admin...), http.StatusCreated)
		expect(t, "POST /remove_worker?url=", send(t, http.MethodPost, rt.URL+"/remove_worker?url="+url.QueryEscape(c), "", admin...), http.StatusOK, `"removed":true`)
		expect(t, "GET /workers/{url} after removal", send(t, http.MethodGet, rt.URL+"/workers/"+c, "", admin...), http.StatusNotFound, `"type":"NotFoundError"`)
		rt.stop()

		b2, err := os.ReadFile(filepath.Join(logDir, routerLogFile))
		if err != nil || !strings.Contains(string(b2), "cb-window-duration-secs") {
			t.Errorf("--log-dir: %v, log %q; want the warning written there", err, b2)
		}

		// With vllm-router's spellings alone there is no admin key: the
		// routes that change workers are disabled, as issue 13 decided.
		open := serveCLI(t, nil, args...)
		for _, path := range []string{"/flush_cache", "/workers", "/add_worker?url=" + url.QueryEscape(c)} {
			expect(t, "POST "+path+" without an admin key", send(t, http.MethodPost, open.URL+path, `{"url":"`+c+`"}`), http.StatusForbidden, "admin_disabled")
		}
	})

	t.Run("pd", func(t *testing.T) {
		p := simtest.Start(t, sim.Options{Role: sim.RolePrefill})
		d := simtest.Start(t, sim.Options{Role: sim.RoleDecode})
		args := append(slices.Clone(common), "--vllm-pd-disaggregation", "--prefill", p, "9001", "--decode", d,
			"--prefill-policy", "round_robin", "--decode-policy", "power_of_two", "--kv-connector", "nixl",
			"--admin-api-key-env", adminEnv)
		rt := serveCLI(t, map[string]string{adminEnv: adminKey}, args...)
		exerciseRoutes(t, rt, []string{p, d}, "vllm_pd", admin)
		r := send(t, http.MethodGet, rt.URL+"/workers", "", admin...)
		expect(t, "GET /workers in PD mode", r, http.StatusOK, `"prefill_policy":"round_robin"`, `"decode_policy":"power_of_two"`)
		if strings.Contains(r.body, `"policy":`) {
			t.Errorf("GET /workers in PD mode names the unused collocated policy: %s", r.body)
		}
	})
}

// exerciseRoutes sends every non-worker-set route of the parity table to
// the router rt in front of workers.
func exerciseRoutes(t *testing.T, rt served, workers []string, mode string, admin []string) {
	t.Helper()
	u := rt.URL
	expect(t, "POST /v1/completions", send(t, http.MethodPost, u+"/v1/completions", `{"prompt":"hello","max_tokens":3}`, admin...), http.StatusOK, `"text_completion"`)
	r := send(t, http.MethodPost, u+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`, append([]string{"X-Parity-Id", "parity-42"}, admin...)...)
	expect(t, "POST /v1/chat/completions (stream)", r, http.StatusOK, "data: [DONE]")
	if got := r.header.Get("X-Request-Id"); got != "parity-42" {
		t.Errorf("--request-id-headers x-parity-id: X-Request-Id %q, want parity-42", got)
	}
	// The simulated engine serves none of these: the worker's own 404
	// (vLLM's NotFoundError) proves the router sent them to a worker.
	for _, path := range []string{"/v1/embeddings", "/generate", "/v1/responses"} {
		expect(t, "POST "+path, send(t, http.MethodPost, u+path, `{"input":"x","text":"x"}`, admin...), http.StatusNotFound, "NotFoundError")
	}
	expect(t, "POST /tokenize (pass-through)", send(t, http.MethodPost, u+"/tokenize", `{"prompt":"hello"}`, admin...), http.StatusOK, `"count"`)
	expect(t, "GET /v1/models", send(t, http.MethodGet, u+"/v1/models", "", admin...), http.StatusOK, simtest.DefaultModel)
	expect(t, "GET /liveness", send(t, http.MethodGet, u+"/liveness", "", admin...), http.StatusOK)
	expect(t, "GET /readiness", send(t, http.MethodGet, u+"/readiness", "", admin...), http.StatusOK, `"healthy_workers"`)
	expect(t, "GET /health", send(t, http.MethodGet, u+"/health", "", admin...), http.StatusOK)
	expect(t, "GET /health_generate", send(t, http.MethodGet, u+"/health_generate", "", admin...), http.StatusOK, `"status":"healthy"`, workers[0], workers[1])
	expect(t, "GET /get_server_info", send(t, http.MethodGet, u+"/get_server_info", "", admin...), http.StatusOK, `"mode":"`+mode+`"`, `"router":"autoinfer"`)
	expect(t, "GET /get_model_info", send(t, http.MethodGet, u+"/get_model_info", "", admin...), http.StatusOK, `"served_model_name":"`+simtest.DefaultModel+`"`)
	r = send(t, http.MethodGet, u+"/engine_metrics", "", admin...)
	expect(t, "GET /engine_metrics", r, http.StatusOK, "vllm:num_requests_running", "autoinfer:engine_metrics_up")
	for _, w := range workers {
		if !strings.Contains(r.body, `worker="`+w+`"`) {
			t.Errorf("GET /engine_metrics has no series of %s", w)
		}
		if !strings.Contains(r.body, "autoinfer:engine_metrics_up{worker=\""+w+"\",pool=") {
			t.Errorf("GET /engine_metrics has no up series for %s", w)
		}
	}
	expect(t, "GET /metrics", send(t, http.MethodGet, u+"/metrics", "", admin...), http.StatusOK, "vllm_router_requests_total")
	expect(t, "GET /metrics on --prometheus-port", send(t, http.MethodGet, rt.MetricsURL, "", admin...), http.StatusOK, "vllm_router_requests_total")
	expect(t, "GET /workers", send(t, http.MethodGet, u+"/workers", "", admin...), http.StatusOK, workers[0], workers[1])
	expect(t, "GET /workers/{raw url}", send(t, http.MethodGet, u+"/workers/"+workers[0], "", admin...), http.StatusOK, `"url":"`+workers[0]+`"`)
	expect(t, "GET /workers/{escaped url}", send(t, http.MethodGet, u+"/workers/"+url.PathEscape(workers[1]), "", admin...), http.StatusOK, `"url":"`+workers[1]+`"`)
	expect(t, "GET /list_workers", send(t, http.MethodGet, u+"/list_workers", "", admin...), http.StatusOK, `"urls":[`, workers[0], workers[1])

	// /flush_cache reaches every worker's prefix cache.
	cachedTokens(t, workers[1])
	if cachedTokens(t, workers[1]) == 0 {
		t.Fatalf("%s: a repeated prompt hit no cached tokens", workers[1])
	}
	expect(t, "POST /flush_cache", send(t, http.MethodPost, u+"/flush_cache", "", admin...), http.StatusOK, `"status":"flushed"`, workers[0], workers[1])
	if n := cachedTokens(t, workers[1]); n != 0 {
		t.Errorf("after /flush_cache %s still held %d cached tokens of the prompt", workers[1], n)
	}

	r = send(t, http.MethodGet, u+"/get_loads", "", admin...)
	expect(t, "GET /get_loads", r, http.StatusOK, workers[0], workers[1])
	var loads struct {
		Workers []struct {
			Worker string
			Load   int64
		}
	}
	if err := json.Unmarshal([]byte(r.body), &loads); err != nil {
		t.Fatal(err)
	}
	for _, l := range loads.Workers {
		if l.Load != 0 {
			t.Errorf("load of %s after the routes: %d, want 0", l.Worker, l.Load)
		}
	}
}

func TestSplitPrefillArgs(t *testing.T) {
	t.Parallel()
	out, ports, err := splitPrefillArgs([]string{"--port", "0", "--prefill", "http://p0:8000", "9000", "--policy", "random",
		"--prefill", "http://p1:8000", "none", "--prefill=http://p2:8000", "--decode", "http://d:8000", "--", "--prefill", "x", "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--port", "0", "--prefill=http://p0:8000", "--policy", "random", "--prefill=http://p1:8000",
		"--prefill=http://p2:8000", "--decode", "http://d:8000", "--", "--prefill", "x", "1"}
	if !slices.Equal(out, want) || !slices.Equal(ports, []string{"9000", "none"}) {
		t.Errorf("split %q ports %q, want %q ports [9000 none]", out, ports, want)
	}
	for _, bad := range [][]string{{"--prefill"}, {"--prefill", "--decode", "http://d"}} {
		if _, _, err := splitPrefillArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRouterServeVLLMRouterFlagErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"backend":             {"--backend", "trtllm"},
		"prometheus port":     {"--prometheus-port", "70000"},
		"cb window":           {"--cb-window-duration-secs", "0"},
		"prefill without url": {"--vllm-pd-disaggregation", "--prefill"},
		"request id header":   {"--request-id-headers", "x id"},
		"unsupported policy":  {"--policy", "rendezvous_hash"},
		"vr-only flag":        {"--enable-igw"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			all := append([]string{"router", "serve", "--port", "0", "--worker-urls", "http://127.0.0.1:1"}, args...)
			if code := Main(all, io.Discard, &stderr); code != ExitUsage {
				t.Fatalf("exit %d (%s), want %d", code, stderr.String(), ExitUsage)
			}
		})
	}
}
