package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// staticProfileSpec runs a second of traffic against two static workers
// the test started; %s is the profile line of the target, if any.
const staticProfileSpec = `
name: static-predicted
seed: 9
target: {kind: static, hardware: test-sim, workers: [%s, %s]%s}
topology: {replicas: 2, engine: {model: sim-llama-3-8b}}
router: {policy: round_robin}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: 16, arrival: {kind: poisson, request_rate: 16}}
warmup: {requests: 2}
gate: {reference: none}
`

// fastWorkers starts two simulated engines of the fast profile on
// loopback, for the static target's workers.
func fastWorkers(t *testing.T) []string {
	t.Helper()
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	return []string{simtest.Start(t, sim.Options{Profile: prof}), simtest.Start(t, sim.Options{Profile: prof})}
}

// Issue 33 acceptance 4 (first half): a real trial against a static
// target whose spec names a profile records, with no flag, its replay on
// the virtual clock as the row's prediction: the row's predicted_by names
// a virtual row of the same stream, and `ledger compare --predicted` pairs
// the measured figures with it. The same spec without a profile records
// no prediction.
func TestStaticTrialWithProfileRecordsItsPrediction(t *testing.T) {
	t.Parallel()
	urls := fastWorkers(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	for i, profile := range []string{", profile: fast", ""} {
		spec := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
		if err := os.WriteFile(spec, fmt.Appendf(nil, staticProfileSpec, urls[0], urls[1], profile), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != ExitOK {
			t.Fatalf("trial run (profile %q): exit %d\n%s\n%s", profile, code, out, errs)
		}
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Row 1 is the replay (recorded first), row 2 the profiled trial, row
	// 3 the trial without a profile.
	m, err := l.Get(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Virtual() || m.TargetKind != "static" || m.PredictedBy == nil {
		t.Fatalf("row 2: clock %s, target %s, predicted_by %v; want a real static row with a prediction", m.Clock, m.TargetKind, m.PredictedBy)
	}
	v, err := l.Get(context.Background(), *m.PredictedBy)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Virtual() || v.WorkloadHash != m.WorkloadHash || v.Completed != m.Completed || v.Hardware != "fast" {
		t.Errorf("prediction row %d: clock %s, workload %s (trial %s), %d done (trial %d), hardware %q (want the profile's name)",
			v.ID, v.Clock, v.WorkloadHash, m.WorkloadHash, v.Completed, m.Completed, v.Hardware)
	}
	bare, err := l.Get(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if bare.Virtual() || bare.PredictedBy != nil {
		t.Errorf("row 3 (no profile): clock %s, predicted_by %v; want a real row without a prediction", bare.Clock, bare.PredictedBy)
	}

	pairs := predictedPairs(t, db)
	if len(pairs) != 1 || pairs[0].Measured != m.ID || pairs[0].Predicted != *m.PredictedBy ||
		len(pairs[0].Metrics) != len(ledger.PredictionMetrics()) {
		t.Fatalf("pairs %+v, want row 2 and its prediction with %d metrics", pairs, len(ledger.PredictionMetrics()))
	}
	var lines []string
	for _, e := range pairs[0].Metrics {
		lines = append(lines, fmt.Sprintf("%s: predicted %.4g, measured %.4g", e.Metric, e.Predicted, e.Measured))
	}
	t.Logf("measured vs predicted:\n%s", strings.Join(lines, "\n"))
}
