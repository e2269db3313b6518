package trials

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
)

// traceSpec is a sim trial replaying data/trace.jsonl, a path relative to
// the spec; maxModelLen 0 leaves the sim's default (8192).
func traceSpec(maxModelLen int) string {
	s := `name: tr
topology:
  replicas: 1
  engine:
    model: m
`
	if maxModelLen > 0 {
		s += "    max_model_len: " + strconv.Itoa(maxModelLen) + "\n"
	}
	return s + `workload:
  kind: trace
  path: data/trace.jsonl
  ignore_timestamps: true
`
}

// writeSpec writes spec and the trace under a new directory and returns
// the spec's path.
func writeSpec(t *testing.T, spec, trace string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "trace.jsonl"), []byte(trace), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(p, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const longTrace = `{"timestamp": 0, "input_length": 100, "output_length": 10}
{"timestamp": 10, "input_length": 9000, "output_length": 100}
{"timestamp": 20, "input_length": 200, "output_length": 10}
`

// TestLoadRefusesARequestLongerThanMaxModelLen: the trace's second line
// cannot fit the sim's default context, so Load refuses the spec naming the
// file's line and the limit; with the limit raised the spec loads, and the
// trace path resolves against the spec's directory, not the working one.
func TestLoadRefusesARequestLongerThanMaxModelLen(t *testing.T) {
	_, err := Load(writeSpec(t, traceSpec(0), longTrace), targetkinds.All())
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("Load = %v, want a *SpecError", err)
	}
	msg := se.Error()
	for _, want := range []string{"workload.path", "trace.jsonl line 2", "9100 tokens", "max_model_len is 8192", "(line 8)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	ts, err := Load(writeSpec(t, traceSpec(16384), longTrace), targetkinds.All())
	if err != nil {
		t.Fatalf("with max_model_len 16384: %v", err)
	}
	if ts[0].SpecDir == "" || ts[0].Workload.Path != "data/trace.jsonl" {
		t.Errorf("spec dir %q, path %q: want the spec's directory and the path as written", ts[0].SpecDir, ts[0].Workload.Path)
	}
}

// TestLoadChecksEveryLineOfTheFile: a bad line anywhere, a CSV given as
// Mooncake JSON Lines and a missing file are each refused naming the file.
func TestLoadChecksEveryLineOfTheFile(t *testing.T) {
	cases := []struct {
		name, spec, trace, want string
	}{
		{"zero output", traceSpec(0), longTrace[:len(longTrace)-1] + "\n{\"timestamp\": 30, \"input_length\": 5, \"output_length\": 0}\n", "line 4"},
		{"csv as mooncake", strings.Replace(traceSpec(0), "  ignore_timestamps: true\n", "  format: mooncake\n", 1),
			"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n", "line 1"},
		{"missing file", strings.Replace(traceSpec(0), "data/trace.jsonl", "data/nosuch.jsonl", 1), longTrace, "nosuch.jsonl"},
	}
	for _, c := range cases {
		_, err := Load(writeSpec(t, c.spec, c.trace), targetkinds.All())
		if err == nil || !strings.Contains(err.Error(), "workload.path") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %v, want a workload.path error naming %q", c.name, err, c.want)
		}
	}
}

// TestLoadChecksOnlyTheRequestsSent: num_prompts 1 sends only the first
// line, which fits.
func TestLoadChecksOnlyTheRequestsSent(t *testing.T) {
	spec := strings.Replace(traceSpec(0), "workload:\n", "workload:\n  num_prompts: 1\n", 1)
	if _, err := Load(writeSpec(t, spec, longTrace), targetkinds.All()); err != nil {
		t.Errorf("Load with num_prompts 1: %v", err)
	}
}
