package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// identitySpec is a small two-replica sim trial; %s is the profile, %s
// the policy line or matrix.
const identitySpec = `name: ident
seed: 3
target: {kind: sim, profile: %s}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b, max_num_seqs: 16}
%s
workload:
  kind: random
  input_len: 32
  output_len: 4
  num_prompts: 12
  arrival: {kind: poisson, request_rate: 40}
warmup: {requests: 2}
gate: {reference: none}
`

// Issue 11, acceptance 1: a fast-profile sweep, then the same spec on
// h100-llama3-8b under another policy marks nothing stale (other
// hardware); then the fast profile under another policy marks exactly the
// fast rows, and every row records its target and profile.
func TestStaleOnlyOnTheSameHardware(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	runSpec := func(name, profile, router string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		writeFile(t, path, fmt.Sprintf(identitySpec, profile, router))
		if code, out, errs := run(t, "trial", "run", path, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errs)
		}
	}
	runSpec("fast-sweep", "fast", "router: {policy: round_robin}\nmatrix:\n  router.policy: [round_robin, least_loaded]")
	runSpec("h100", "h100-llama3-8b", "router: {policy: cache_aware}")

	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := l.List(context.Background(), ledger.Filter{IncludeStale: true})
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for _, r := range rows {
		if r.Stale {
			t.Errorf("row %d (%s on %s) stale after a trial on other hardware: %s", r.ID, r.Name, r.Hardware, r.StaleReason)
		}
		if r.TargetKind != "sim" || r.HardwareHash == "" || len(r.HardwareConfig) == 0 || r.Model != "sim-llama-3-8b" {
			t.Errorf("row %d identity: %+v", r.ID, r.Identity)
		}
	}
	// Rows list newest first: the h100 row, then the sweep's.
	if rows[0].Hardware == rows[2].Hardware || rows[0].HardwareHash == rows[2].HardwareHash {
		t.Errorf("fast and h100 rows share hardware %q/%q", rows[0].Hardware, rows[2].Hardware)
	}

	runSpec("fast-ca", "fast", "router: {policy: cache_aware}")
	l, err = ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err = l.List(context.Background(), ledger.Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	var newest int64
	for _, r := range rows {
		newest = max(newest, r.ID)
	}
	for _, r := range rows {
		want := r.Hardware == "fast" && r.ID != newest
		if r.Stale != want {
			t.Errorf("row %d (%s on %s): stale %v (%q), want %v", r.ID, r.Name, r.Hardware, r.Stale, r.StaleReason, want)
		}
	}
}
