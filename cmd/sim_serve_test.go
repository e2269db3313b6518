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
	for _, args := range [][]string{
		{"--profile", "nope"}, {"--role", "both"}, {"--error-rate", "503"}, {"--replicas", "0"},
		{"--error-rate", "200=0.5"}, {"--step-base-ms", "-1"}, {"--quantization", "fp8", "--flip-rate", "2"},
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
