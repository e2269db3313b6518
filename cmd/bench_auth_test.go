package cmd

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// keyedServer puts a simulated engine behind a proxy that answers 401 in
// OpenAI's error shape unless the request carries "Bearer key", as
// `vllm serve --api-key` does, and records every inference request (POST)
// it forwards; model listings (GET /v1/models, which bench reads for
// max_model_len) are forwarded but not recorded.
type keyedServer struct {
	URL  string
	mu   sync.Mutex
	seen []*http.Request
	body [][]byte
}

func startKeyed(t *testing.T, key string) *keyedServer {
	t.Helper()
	target, err := url.Parse(simtest.Start(t, sim.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	ks := &keyedServer{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Unauthorized","type":"AuthenticationError","param":null,"code":401}}`)
			return
		}
		if r.Method != http.MethodPost {
			proxy.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		ks.mu.Lock()
		ks.seen = append(ks.seen, r.Clone(r.Context()))
		ks.body = append(ks.body, b)
		ks.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ks.URL = srv.URL
	return ks
}

// TestBenchAPIKeyFromEnvironmentNeverWritten measures a keyed server with
// the key from OPENAI_API_KEY and checks that no output (stdout, stderr,
// result with per-request arrays, request export) holds the key.
func TestBenchAPIKeyFromEnvironmentNeverWritten(t *testing.T) {
	const key = "sk-test-4f9c2e7d1b8a"
	ks := startKeyed(t, key)
	t.Setenv("OPENAI_API_KEY", key)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := Main([]string{"bench", "--base-url", ks.URL, "--model", simtest.DefaultModel, "--num-prompts", "8", "--num-warmups", "2",
		"--random-input-len", "16", "--random-output-len", "4", "--save-result", "--save-detailed", "--result-dir", dir,
		"--result-filename", "r.json", "--export-requests", filepath.Join(dir, "requests.jsonl"), "--metadata", "owner=ci"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "Successful requests:                     8") {
		t.Errorf("not every request succeeded:\n%s", out.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 {
		t.Fatalf("output files %v, want the result and the export", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the API key", f)
		}
	}
	if strings.Contains(out.String()+errOut.String(), key) {
		t.Error("the console output holds the API key")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil || res["owner"] != "ci" {
		t.Errorf("result lacks the metadata owner=ci: %v %v", res["owner"], err)
	}

	// Without the key the ready check gets the server's 401: exit 3 with
	// its message, and nothing measured is sent.
	t.Setenv("OPENAI_API_KEY", "")
	ks.mu.Lock()
	before := len(ks.seen)
	ks.mu.Unlock()
	out.Reset()
	errOut.Reset()
	code = Main([]string{"bench", "--base-url", ks.URL, "--model", simtest.DefaultModel, "--num-prompts", "8", "--num-warmups", "2"}, &out, &errOut)
	if code != ExitInfra || !strings.Contains(errOut.String(), "HTTP 401") || !strings.Contains(errOut.String(), "Unauthorized") {
		t.Errorf("without a key: exit %d, stderr %q; want exit 3 with the server's 401 message", code, errOut.String())
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.seen) != before {
		t.Errorf("%d requests got through without a key", len(ks.seen)-before)
	}
}

// TestBenchUnknownModelFailsFast: --model nosuch against the sim exits 3
// with the server's own message after the single ready-check request,
// instead of sending every warm-up and measured request.
func TestBenchUnknownModelFailsFast(t *testing.T) {
	ks := startKeyed(t, "k")
	t.Setenv("OPENAI_API_KEY", "k")
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Main([]string{"bench", "--base-url", ks.URL, "--model", "nosuch", "--num-prompts", "50", "--num-warmups", "100"}, &out, &errOut)
	t.Logf("exit %d after %v", code, time.Since(start))
	if code != ExitInfra || !strings.Contains(errOut.String(), "The model `nosuch` does not exist.") {
		t.Errorf("exit %d, stderr %q; want exit 3 with the sim's message", code, errOut.String())
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.seen) != 1 {
		t.Errorf("%d requests sent, want only the ready check's", len(ks.seen))
	}
}

// TestBenchRequestExtras: sampling flags, --extra-body, --header and
// --request-id-prefix reach every request; --append-result adds a line.
func TestBenchRequestExtras(t *testing.T) {
	ks := startKeyed(t, "k")
	dir := t.TempDir()
	args := []string{"bench", "--base-url", ks.URL, "--model", simtest.DefaultModel, "--api-key", "k", "--num-prompts", "5",
		"--num-warmups", "0", "--ready-check-timeout-sec", "0", "--random-input-len", "8", "--random-output-len", "2",
		"--top-p", "0.9", "--top-k", "20", "--min-p", "0.05", "--extra-body", `{"priority": 3, "temperature": 0.5}`,
		"--header", "X-Tenant: blue", "--header", "X-Team=red", "--request-id-prefix", "run7-",
		"--save-result", "--append-result", "--result-dir", dir, "--result-filename", "all.jsonl"}
	for range 2 {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.seen) != 10 {
		t.Fatalf("%d requests, want 10", len(ks.seen))
	}
	ids := map[string]bool{}
	for i, r := range ks.seen {
		var body map[string]any
		if err := json.Unmarshal(ks.body[i], &body); err != nil {
			t.Fatal(err)
		}
		if body["top_p"] != 0.9 || body["top_k"] != 20.0 || body["min_p"] != 0.05 || body["priority"] != 3.0 || body["temperature"] != 0.5 {
			t.Errorf("request %d body %s lacks the sampling / extra-body fields", i, ks.body[i])
		}
		if r.Header.Get("X-Tenant") != "blue" || r.Header.Get("X-Team") != "red" {
			t.Errorf("request %d headers %v lack X-Tenant / X-Team", i, r.Header)
		}
		ids[r.Header.Get("X-Request-Id")] = true
	}
	for i := range 5 {
		if !ids["run7-"+string(rune('0'+i))] {
			t.Errorf("no request with X-Request-Id run7-%d (have %v)", i, ids)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "all.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 2 {
		t.Errorf("appended result file has %d lines, want 2", lines)
	}
}
