package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTrialValidateExample(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "trial", "validate", "../trials/examples/quickstart.yaml")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"valid, 2 trials (sweep ", "quickstart/router.policy=round_robin", "quickstart/router.policy=cache_aware", "embedded cache_aware", "2 replicas"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "trial", "validate", "-o", "json", "../trials/examples/pd.yaml")
	if code != ExitOK || !strings.Contains(out, `"spec_hash"`) || !strings.Contains(out, `"pd_disaggregation": true`) {
		t.Errorf("json output (exit %d):\n%s", code, out)
	}
}

func TestTrialValidateInvalidSpecExits2(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: bad\ntopology:\n  replicas: 0\n  engine: {model: m}\nworkload: {kind: random, num_prompts: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "trial", "validate", path)
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(errs, "topology.replicas: must be ≥ 1 (line 3)") {
		t.Errorf("stderr lacks the field error:\n%s", errs)
	}
	if code, _, _ := run(t, "trial", "validate", filepath.Join(t.TempDir(), "missing.yaml")); code != ExitUsage {
		t.Errorf("missing file: exit %d, want %d", code, ExitUsage)
	}
}

func TestTrialInit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trial.yaml")
	if code, _, errs := run(t, "trial", "init", "--output", path); code != ExitOK {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	if code, out, errs := run(t, "trial", "validate", path); code != ExitOK {
		t.Fatalf("the starter spec does not validate (exit %d): %s%s", code, out, errs)
	}
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "trial", "init", "--output", path)
	if code != ExitUsage || !strings.Contains(errs, "--force") {
		t.Errorf("overwrite without --force: exit %d, %s", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Error("init overwrote an existing file without --force")
	}
	if code, _, errs := run(t, "trial", "init", "--output", path, "--force"); code != ExitOK {
		t.Errorf("--force: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "# autoinfer trial spec") {
		t.Error("--force did not write the starter spec")
	}
}
