package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrialTraceLongerThanMaxModelLen is issue 19's acceptance 2 (first
// half): a spec whose trace (a path relative to the spec, run from another
// directory) has a request longer than the sim's max_model_len fails
// `trial validate` and `trial run` with exit 2 naming the trace line and the
// limit, before anything runs; with the limit raised the trial runs and
// every request completes.
func TestTrialTraceLongerThanMaxModelLen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	trace := `{"timestamp": 0, "input_length": 100, "output_length": 4}
{"timestamp": 5, "input_length": 8500, "output_length": 4}
{"timestamp": 10, "input_length": 200, "output_length": 4}
`
	if err := os.WriteFile(filepath.Join(dir, "traces", "t.jsonl"), []byte(trace), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := func(engine string) string {
		p := filepath.Join(dir, "spec.yaml")
		s := "name: ctx\ntopology:\n  replicas: 1\n  engine:\n    model: m\n" + engine +
			"workload:\n  kind: trace\n  path: traces/t.jsonl\n  ignore_timestamps: true\n" +
			"warmup:\n  requests: 2\ngate:\n  reference: none\n"
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := spec("")
	db := filepath.Join(dir, "ledger.db")
	for _, cmd := range [][]string{{"trial", "validate", p}, {"trial", "run", p, "--ledger", db}} {
		code, out, errs := run(t, cmd...)
		if code != ExitUsage {
			t.Fatalf("%s: exit %d, want %d\n%s%s", cmd[1], code, ExitUsage, out, errs)
		}
		for _, want := range []string{"t.jsonl line 2", "8504 tokens", "max_model_len is 8192", "topology.engine.max_model_len"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd[1], want, errs)
			}
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the refused trial run created a ledger")
	}
	p = spec("    max_model_len: 16384\n")
	if code, out, errs := run(t, "trial", "validate", p); code != ExitOK {
		t.Fatalf("validate with max_model_len 16384: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(t, "trial", "run", p, "--ledger", db, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("run with max_model_len 16384: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, `"completed": 3`) {
		t.Errorf("want all 3 trace requests completed:\n%s", out)
	}
}
