package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// onlySpec is a sweep of two router policies over one deployment and
// stream: rows of other sweeps with another policy would be made stale.
const onlySpec = `name: only
seed: 3
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b, max_num_seqs: 16}
router: {policy: round_robin}
workload:
  kind: random
  input_len: 32
  output_len: 4
  num_prompts: 12
  arrival: {kind: poisson, request_rate: 40}
warmup: {requests: 2}
gate: {reference: none}
matrix:
  router.policy: [round_robin, cache_aware]
`

// everyRow opens the ledger at db read-only (closed with the test) and
// lists every row, stale and virtual ones included.
func everyRow(t *testing.T, db string) (*ledger.Ledger, []ledger.Trial) {
	t.Helper()
	l, err := ledger.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rows, err := l.List(t.Context(), ledger.Filter{IncludeStale: true, IncludeVirtual: true})
	if err != nil {
		t.Fatal(err)
	}
	return l, rows
}

// Issue 30, acceptance 5: --only re-runs one member of a sweep under the
// sweep's own id, and none of the sweep's rows becomes stale (a re-run as
// a spec of its own would have another sweep id and mark its sibling,
// whose router policy differs, stale).
func TestTrialRunOnlyRerunsAMemberOfItsSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, spec := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "only.yaml")
	writeFile(t, spec, onlySpec)
	flags := []string{"--ledger", db, "--clock", "virtual"}
	if code, out, errs := run(t, append([]string{"trial", "run", spec}, flags...)...); code != ExitOK {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, out, errs)
	}
	const member = "only/router.policy=cache_aware"
	if code, out, errs := run(t, append([]string{"trial", "run", spec, "--only", member}, flags...)...); code != ExitOK {
		t.Fatalf("--only: exit %d\n%s\n%s", code, out, errs)
	}
	_, rows := everyRow(t, db)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the sweep's 2 and the re-run member's 1", len(rows))
	}
	names := map[string]int{}
	for _, r := range rows {
		names[r.Name]++
		if r.SweepID == "" || r.SweepID != rows[0].SweepID {
			t.Errorf("row %d (%s): sweep %q, want every row in sweep %q", r.ID, r.Name, r.SweepID, rows[0].SweepID)
		}
		if r.Stale {
			t.Errorf("row %d (%s) is stale: %s", r.ID, r.Name, r.StaleReason)
		}
	}
	if names[member] != 2 {
		t.Errorf("rows by name %v: want %s twice", names, member)
	}

	code, _, errs := run(t, append([]string{"trial", "run", spec, "--only", "only/router.policy=nope"}, flags...)...)
	if code != ExitUsage || !strings.Contains(errs, "--only: the spec has no trial only/router.policy=nope") || !strings.Contains(errs, member) {
		t.Errorf("unknown member: exit %d, stderr:\n%s", code, errs)
	}
}

// Issue 30, acceptance 5: trial validate checks a search spec's block and
// space and prints how many candidates it expands to; a broken block is a
// usage error naming its field.
func TestTrialValidateSearchSpec(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "trial", "validate", "../trials/examples/search/gpu8.yaml")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{"valid search (sweep ", "1000 candidates in the space", "500 outside the GPU budget of 8", ": 500 candidates to run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	base, _, _ := strings.Cut(onlySpec, "matrix:")
	writeFile(t, bad, base+"search:\n  space: {topology.engine.max_num_seqs: [8, 16]}\n  objective: {maximize: no_such_metric}\n")
	code, _, errs = run(t, "trial", "validate", bad)
	if code != ExitUsage || !strings.Contains(errs, "search.objective.maximize") {
		t.Errorf("bad objective: exit %d, stderr:\n%s", code, errs)
	}
	writeFile(t, bad, base+"search:\n  space: {topology.engine.max_num_seqs: [8, 16]}\n  constraints: {gpus: 3}\n  objective: {maximize: request_throughput}\n")
	code, out, errs = run(t, "trial", "validate", bad)
	if code != ExitUsage || !strings.Contains(out, "2 outside the GPU budget of 3: 0 candidates to run") || !strings.Contains(errs, "search.constraints.gpus") {
		t.Errorf("no candidate within budget: exit %d\n%s\n%s", code, out, errs)
	}
}
