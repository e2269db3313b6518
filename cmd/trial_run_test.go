package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// Acceptance 10: the CI smoke spec passes, and fails with a message naming
// the metric, its value and the bound when an assertion or the baseline
// tolerance is violated.
func TestTrialRunCISmokeChecks(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	spec := "../trials/examples/ci-smoke.yaml"

	code, out, errs := run(t, "trial", "run", spec, "--ledger", db)
	if code != ExitOK || !strings.Contains(out, "ci-smoke") {
		t.Fatalf("passing run: exit %d\n%s\n%s", code, out, errs)
	}

	code, _, errs = run(t, "trial", "run", spec, "--ledger", db, "--assert", "p99_ttft_ms < 0.001")
	if code != ExitFailed || !strings.Contains(errs, "p99_ttft_ms = ") || !strings.Contains(errs, "want < 0.001") {
		t.Fatalf("violated assertion: exit %d, stderr %q", code, errs)
	}

	// A baseline far better than anything this machine can do.
	seedBaseline(t, db, "impossible-baseline", 1e9, 0.001)
	code, _, errs = run(t, "trial", "run", spec, "--ledger", db, "--baseline", "impossible-baseline", "--tolerance", "10%")
	if code != ExitFailed || !strings.Contains(errs, "output_throughput = ") || !strings.Contains(errs, "below the bound") {
		t.Fatalf("violated baseline: exit %d, stderr %q", code, errs)
	}

	// A baseline worse than anything this machine can do passes: the
	// verdict depends on the recorded figures, not on how loaded the
	// machine is now.
	seedBaseline(t, db, "slow-baseline", 1e-9, 1e9)
	code, out, errs = run(t, "trial", "run", spec, "--ledger", db, "--baseline", "slow-baseline", "--tolerance", "10%")
	if code != ExitOK {
		t.Fatalf("baseline within tolerance: exit %d\n%s\n%s", code, out, errs)
	}

	code, _, errs = run(t, "trial", "run", spec, "--ledger", db, "--baseline", "no-such-trial")
	if code != ExitUsage || !strings.Contains(errs, "no-such-trial") {
		t.Fatalf("unknown baseline: exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "trial", "run", spec, "--ledger", db, "--assert", "p99_bogus < 1")
	if code != ExitUsage || !strings.Contains(errs, "--assert[0]") {
		t.Fatalf("bad --assert: exit %d, stderr %q", code, errs)
	}
}

func TestTrialRunRejectsInvalidSpec(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "name: x\ntopology: {replicas: 0}\nworkload: {kind: random}\n")
	db := filepath.Join(t.TempDir(), "ledger.db")
	code, _, errs := run(t, "trial", "run", bad, "--ledger", db)
	if code != ExitUsage || !strings.Contains(errs, "topology") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// seedBaseline records an ok row with the given throughput and p99
// latencies (TTFT and TPOT).
func seedBaseline(t *testing.T, path, name string, throughput, p99Ms float64) {
	t.Helper()
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.Now()
	tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: now, FinishedAt: now,
		EngineConfig: ledger.JSON(`{"model":"elsewhere"}`), Topology: ledger.Topology{Replicas: 1}}
	tr.OutputThroughput, tr.P99TTFTMs, tr.P99TPOTMs = throughput, p99Ms, p99Ms
	if _, err := l.Record(context.Background(), tr, nil); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
