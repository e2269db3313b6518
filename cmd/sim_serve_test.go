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
)

func TestSimServePrintsOneLinePerEngineAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs([]string{"sim", "serve", "--replicas", "3", "--port", "0", "--profile", "fast", "--model", "m1"})
	root.SetOut(pw)
	var stderr bytes.Buffer
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()

	sc := bufio.NewScanner(pr)
	var lines []engineLine
	for len(lines) < 3 && sc.Scan() {
		var l engineLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 3 {
		t.Fatalf("got %d engine lines, want 3 (stderr: %s)", len(lines), stderr.String())
	}
	seen := map[string]bool{}
	for i, l := range lines {
		if l.Replica != i || l.Model != "m1" || l.Profile != "fast" || !strings.HasPrefix(l.URL, "http://127.0.0.1:") || seen[l.URL] {
			t.Fatalf("line %d: %+v", i, l)
		}
		seen[l.URL] = true
		resp, err := http.Post(l.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m1","prompt":"the","max_tokens":2}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("engine %d at %s: %v %v", i, l.URL, err, resp)
		}
		resp.Body.Close()
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after its context was cancelled, want nil", err)
	}
}

func TestSimServeRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--profile", "nope"}, {"--role", "both"}, {"--error-rate", "503"}, {"--replicas", "0"},
		{"--error-rate", "200=0.5"}, {"--step-base-ms", "-1"}, {"--quantization", "fp8", "--flip-rate", "2"},
		{"--model-config", "config.json"}, {"--gpu", "h100"}, {"--model-config", "/nonexistent/config.json", "--gpu", "h100"},
		{"--profile", "h100-llama3-70b-tp4", "--tensor-parallel-size", "2"}, {"--gpu-time-scale", "0", "--profile", "h100-llama3-8b"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"sim", "serve", "--port", "0"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(t.Context())
		if exitCode(err) != ExitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args, exitCode(err), err, ExitUsage)
		}
	}
}

// sim profiles lists every built-in profile with where its figures come from.
func TestSimProfilesListsSourcesAndErrors(t *testing.T) {
	t.Parallel()
	root := newRootCmd()
	root.SetArgs([]string{"sim", "profiles", "--json"})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := map[string]profileRow{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r profileRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		rows[r.Name] = r
	}
	h100, h200, fast := rows["h100-llama3-8b"], rows["h200-llama3-8b"], rows["fast"]
	if h100.Linear != "measured" || h100.MaxNumSeqs != 1024 || !strings.Contains(h100.Accuracy, "held-out") || !strings.Contains(h100.Source, "vidur") {
		t.Errorf("h100-llama3-8b: %+v", h100)
	}
	if h200.Linear != "derived" || !strings.Contains(h200.Source, "derived") {
		t.Errorf("h200-llama3-8b: %+v", h200)
	}
	if rows["a100-llama3-8b"].MaxNumSeqs != 256 || rows["a100-llama3-8b"].MaxNumBatchedTokens != 2048 {
		t.Errorf("a100 defaults: %+v, want vLLM V1's 256 / 2048", rows["a100-llama3-8b"])
	}
	if fast.Linear != "linear formula" {
		t.Errorf("fast: %+v", fast)
	}
}
