package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestBenchAgainstSim runs `autoinfer bench` end to end against a simulated
// engine on loopback: the results block is printed, the saved JSON carries
// vllm's result keys and autoinfer's, with exact token counts (the
// simulator counts prompts with the same tokenizer and honours
// ignore_eos), and the request export has one line per request.
func TestBenchAgainstSim(t *testing.T) {
	url := simtest.Start(t, sim.Options{})
	dir := t.TempDir()
	export := filepath.Join(dir, "requests.jsonl")
	var out, errOut bytes.Buffer
	code := Main([]string{"bench", "--base-url", url, "--dataset-name", "random", "--random-input-len", "64",
		"--random-output-len", "8", "--num-prompts", "30", "--request-rate", "200", "--seed", "3", "--num-warmups", "5",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json", "--label", "e2e",
		"--metric-percentiles", "50,99.9", "--percentile-metrics", "ttft,tpot,itl,e2el", "--export-requests", export,
		"--goodput", "ttft:10000", "tpot:10000"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"Serving Benchmark Result", "Successful requests:                     30", "P99.9 E2EL (ms):", "Request goodput (req/s):", "Achieved request rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency", "duration",
		"completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
		"total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms",
		"p99_ttft_ms", "p90_tpot_ms", "p50_itl_ms", "p99.9_e2el_ms", "mean_schedule_delay_ms", "p99_schedule_delay_ms",
		"achieved_request_rate", "errors_by_status", "errors_by_type", "trial_id", "seed", "warmup_requests", "stream_hash",
		"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks key %q", k)
		}
	}
	if res["completed"] != 30.0 || res["total_input_tokens"] != 30*64.0 || res["total_output_tokens"] != 30*8.0 || res["model_id"] != simtest.DefaultModel || res["label"] != "e2e" {
		t.Errorf("result: completed %v, tokens %v in / %v out, model %v", res["completed"], res["total_input_tokens"], res["total_output_tokens"], res["model_id"])
	}
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var r struct {
			Success      bool `json:"success"`
			OutputTokens int  `json:"output_tokens"`
			PromptTokens *int `json:"prompt_tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || !r.Success || r.OutputTokens != 8 || r.PromptTokens == nil {
			t.Fatalf("export line %d: %s (%v)", lines, sc.Text(), err)
		}
	}
	if lines != 30 {
		t.Errorf("%d exported requests, want 30", lines)
	}
}

func TestBenchBadFlagsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-rate", "fast"}, "--request-rate"},
		{[]string{"--random-input-len", "-4"}, "--random-input-len"},
		{[]string{"--random-range-ratio", "2"}, "--random-range-ratio"},
		{[]string{"--gsp-num-groups", "4"}, "--gsp-num-groups: applies to --dataset-name shared_prefix"},
		{[]string{"--dataset-name", "sharded"}, "--dataset-name"},
		{[]string{"--dataset-name", "sharegpt"}, "--dataset-path"},
		{[]string{"--top-p", "2"}, "--top-p"},
		{[]string{"--extra-body", "[1]"}, "--extra-body"},
		{[]string{"--header", "novalue"}, "--header"},
		{[]string{"--ramp-up-strategy", "cubic", "--ramp-up-end-rps", "5"}, "--ramp-up-strategy"},
		{[]string{"--ready-check-timeout-sec", "-1"}, "--ready-check-timeout-sec"},
		{[]string{"--tokenizer", "no/such/file.json"}, "--tokenizer"},
		{[]string{"--dataset-name", "trace"}, "--dataset-path"},
		{[]string{"--goodput", "ttfb:5"}, "--goodput"},
		{[]string{"--backend", "tgi"}, "--backend"},
		{[]string{"--arrival", "closed_loop"}, "--max-concurrency"},
		{[]string{"--metric-percentiles", "101"}, "--metric-percentiles"},
		{[]string{"--percentile-metrics", "ttft,latency"}, "--percentile-metrics"},
		{[]string{"--num-prompts", "-1"}, "--num-prompts"},
		{[]string{"--session-header", "X Session"}, "--session-header"},
		{[]string{"--run-id-header", "X-Run:ID"}, "--run-id-header"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"stray"}, "stray"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"bench", "--model", "m", "--base-url", "http://127.0.0.1:1"}, tc.args...)
		if code := Main(args, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestBenchWithoutModelNeedsTheServersList: without --model, bench asks
// GET /v1/models; a server that cannot list models is an infrastructure
// failure (exit 3) whose message says why.
func TestBenchWithoutModelNeedsTheServersList(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	var out, errOut bytes.Buffer
	code := Main([]string{"bench", "--base-url", srv.URL, "--num-prompts", "1", "--num-warmups", "0"}, &out, &errOut)
	if code != ExitInfra || !strings.Contains(errOut.String(), "--model not given") || !strings.Contains(errOut.String(), "HTTP 404") {
		t.Errorf("exit %d, stderr %q; want exit %d naming --model and HTTP 404", code, errOut.String(), ExitInfra)
	}
}
