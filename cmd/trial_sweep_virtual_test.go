package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// A rate sweep run with --clock virtual runs every one of its runs in
// virtual time: each row is virtual, and no request was sent later than
// planned in a constant-rate run (a real-time run has send jitter and
// a schedule delay).
func TestTrialRunSweepOnTheVirtualClock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec, db := filepath.Join(dir, "sweep.yaml"), filepath.Join(dir, "ledger.db")
	writeFile(t, spec, `name: vsw
target: {kind: sim, profile: fast}
topology:
  replicas: 1
  engine: {model: sim-llama-3-8b}
workload:
  kind: random
  input_len: 32
  output_len: 4
  num_prompts: 12
  arrival: {kind: sweep, rates: 2}
warmup: {requests: 2}
slo: {e2el_ms: 60000}
gate: {reference: none}
`)
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--clock", "virtual"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	l, rows := everyRow(t, db)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (synchronous, throughput, 2 rates)", len(rows))
	}
	for _, r := range rows {
		if r.Clock != "virtual" || r.MaxScheduleDelayMs != 0 {
			t.Errorf("row %s: clock %q, max schedule delay %v ms; want virtual, 0", r.Name, r.Clock, r.MaxScheduleDelayMs)
		}
		reqs, err := l.Requests(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range reqs {
			if !strings.Contains(r.Name, "request_rate=") {
				break // the synchronous and throughput runs send as answers come: no plan
			}
			if q.ActualSendMs != q.IntendedSendMs {
				t.Errorf("row %s request %d: sent at %v ms, planned %v ms: a real-time send", r.Name, q.Index, q.ActualSendMs, q.IntendedSendMs)
				break
			}
		}
	}
}
