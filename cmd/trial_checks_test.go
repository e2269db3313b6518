package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// Issue 11, acceptance 3: a violated --assert exits 1 and records a failed
// row with AssertionViolated that is not on the Pareto front and marks no
// earlier row stale, although its router config differs from theirs.
func TestViolatedAssertionIsAFailedRowThatMarksNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	spec, err := os.ReadFile("../trials/examples/ci-smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rr := filepath.Join(dir, "rr.yaml")
	writeFile(t, rr, string(spec))
	ll := filepath.Join(dir, "ll.yaml")
	writeFile(t, ll, strings.Replace(string(spec), "policy: round_robin", "policy: least_loaded", 1))

	// achieved_request_rate was a pareto axis but no --assert metric.
	if code, out, errs := run(t, "trial", "run", rr, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag,
		"--assert", "achieved_request_rate > 0"); code != ExitOK {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := run(t, "trial", "run", ll, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag,
		"--assert", "p99_ttft_ms < 0.001")
	if code != ExitFailed {
		t.Fatalf("violated assertion: exit %d, want %d\n%s\n%s", code, ExitFailed, out, errs)
	}

	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The real-time rows, newest first (each trial's virtual replay has a
	// row of its own, left out here).
	rows, err := l.List(context.Background(), ledger.Filter{IncludeStale: true})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d real-time rows (%v), want 2", len(rows), err)
	}
	first, second := rows[1], rows[0]
	if second.Status != ledger.StatusFailed || second.FailureKind != failure.KindAssertionViolated {
		t.Fatalf("second row: status %s, failure %s; want failed, AssertionViolated", second.Status, second.FailureKind)
	}
	av, ok := second.Failure.(failure.AssertionViolated)
	if !ok || av.Metric != "p99_ttft_ms" || av.Bound != 0.001 || av.Op != "<" || av.Value != second.P99TTFTMs {
		t.Errorf("failure = %#v, want p99_ttft_ms = %g, want < 0.001", second.Failure, second.P99TTFTMs)
	}
	if first.Stale {
		t.Errorf("first row marked stale by a failed check: %s", first.StaleReason)
	}
	front, err := l.Pareto(context.Background(), ledger.ParetoQuery{X: "p99_ttft_ms", Y: "output_throughput", AllPoints: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range front.Points {
		if p.ID == second.ID {
			t.Errorf("the failed row is a Pareto point: %+v", p)
		}
	}
	if len(front.Points) != 1 {
		t.Errorf("pareto points = %+v, want only row 1", front.Points)
	}
}
