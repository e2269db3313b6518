package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/stale"
)

// variantSpec puts four simulated engines in three deployments: four
// collocated replicas, one prefill and three decode, two and two. %s is
// the base router policy, which only the collocated variant uses.
const variantSpec = `name: pd
seed: 5
target: {kind: sim, profile: fast}
topology:
  replicas: 4
  engine: {model: sim-llama-3-8b, max_num_seqs: 16}
router: {policy: %s}
workload:
  kind: random
  input_len: 32
  output_len: 4
  num_prompts: 16
  arrival: {kind: poisson, request_rate: 40}
warmup: {requests: 2}
gate: {reference: none}
variants:
  - name: c4
  - name: 1p3d
    topology: {prefill: 1, decode: 3}
    router: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: least_loaded, kv_connector: nixl}
  - name: 2p2d
    topology: {prefill: 2, decode: 2}
    router: {pd_disaggregation: true, prefill_policy: round_robin, decode_policy: least_loaded, kv_connector: nixl}
`

// Issue 11, acceptance 2: one spec with variants runs 4 collocated, 1P3D
// and 2P2D at equal engine count on identical traffic (equal workload hash
// and request bytes in every row), ledger compare shows them side by side
// labelled by name, and re-running with another base policy marks only the
// collocated row stale: no stale reason names a setting that was not in
// effect (router.policy for PD rows).
func TestVariantsCompareDeploymentsOnOneStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	runSpec := func(name, policy string) string {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		writeFile(t, path, fmt.Sprintf(variantSpec, policy))
		code, out, errs := run(t, "trial", "run", path, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errs)
		}
		return out
	}
	runSpec("first", "round_robin")

	ctx := context.Background()
	l, err := ledger.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := l.List(ctx, ledger.Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	byName := map[string]ledger.Trial{}
	for _, r := range rows {
		byName[r.Name] = r
		if r.WorkloadHash == "" || r.WorkloadHash != rows[0].WorkloadHash || r.SweepID != rows[0].SweepID {
			t.Errorf("%s: workload hash %q sweep %q; want one stream and one sweep (%q, %q)", r.Name, r.WorkloadHash, r.SweepID,
				rows[0].WorkloadHash, rows[0].SweepID)
		}
		if r.Replicas+r.Prefill+r.Decode != 4 {
			t.Errorf("%s: %d+%d+%d engines, want 4", r.Name, r.Replicas, r.Prefill, r.Decode)
		}
	}
	c4, p13, p22 := byName["pd/variant=c4"], byName["pd/variant=1p3d"], byName["pd/variant=2p2d"]
	if c4.Replicas != 4 || p13.Prefill != 1 || p13.Decode != 3 || p22.Prefill != 2 || p22.Decode != 2 {
		t.Fatalf("rows %v: want c4, 1p3d and 2p2d with their topologies", byName)
	}
	// Identical traffic: the same prompts in the same order.
	reqs := map[string][]ledger.Request{}
	for _, r := range rows {
		if reqs[r.Name], err = l.Requests(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	for name, rs := range reqs {
		if len(rs) != 16 {
			t.Fatalf("%s: %d requests, want 16", name, len(rs))
		}
		for i, r := range rs {
			if r.InputTokens != reqs["pd/variant=c4"][i].InputTokens {
				t.Errorf("%s request %d: %d input tokens, c4 sent %d", name, i, r.InputTokens, reqs["pd/variant=c4"][i].InputTokens)
			}
		}
	}
	l.Close()

	for _, b := range []string{"pd/variant=1p3d", "pd/variant=2p2d"} {
		code, out, errs := run(t, "ledger", "compare", "pd/variant=c4", b, "--ledger", db)
		if code != ExitOK || !strings.Contains(out, "A: pd/variant=c4 (trial ") || !strings.Contains(out, "B: "+b+" (trial ") ||
			!strings.Contains(out, "p99_ttft_ms") {
			t.Errorf("compare c4 %s: exit %d\n%s\n%s", b, code, out, errs)
		}
	}

	out := runSpec("second", "least_loaded")
	if !strings.Contains(out, "MADE STALE") {
		t.Errorf("trial output lacks the MADE STALE column:\n%s", out)
	}
	l, err = ledger.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err = l.List(ctx, ledger.Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	var staleRows []string
	for _, r := range rows {
		if !r.Stale {
			continue
		}
		staleRows = append(staleRows, r.Name)
		for _, part := range strings.Split(r.StaleReason, "; ") {
			path, _, _ := strings.Cut(part, ":")
			if !stale.Effective(path, r.Prefill > 0) {
				t.Errorf("row %d (%s) stale for %q, a setting it did not use", r.ID, r.Name, part)
			}
		}
	}
	if len(staleRows) != 1 || staleRows[0] != "pd/variant=c4" || c4.ID == 0 {
		t.Errorf("stale rows %v, want only the first pd/variant=c4", staleRows)
	}
	if got, _ := l.Get(ctx, c4.ID); got.StaleReason != "router.policy: round_robin→least_loaded" {
		t.Errorf("c4 stale reason %q", got.StaleReason)
	}
}

// Issue 11: a policy sweep crossed with single-replica trials ran
// identical trials under several names. The repeat now runs once, and
// both validate and run say so.
func TestRepeatedTrialRunsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	path := filepath.Join(dir, "rep.yaml")
	writeFile(t, path, fmt.Sprintf(identitySpec, "fast", "router: {policy: round_robin}\nmatrix:\n  topology.replicas: [1]\n  router.policy: [round_robin, least_loaded]"))
	code, out, errs := run(t, "trial", "validate", path)
	if code != ExitOK || !strings.Contains(out, "no: same as ident/topology.replicas=1,router.policy=round_robin") {
		t.Fatalf("validate: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = run(t, "trial", "run", path, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	want := "ident/topology.replicas=1,router.policy=least_loaded = ident/topology.replicas=1,router.policy=round_robin: router.policy=least_loaded has no effect: one replica without PD runs no router"
	if !strings.Contains(out, "not run, the same trial after defaults as one above (1):") || !strings.Contains(out, want) ||
		!strings.Contains(errs, "[2/2] ident/topology.replicas=1,router.policy=least_loaded: not run, same as") {
		t.Errorf("output does not say the repeat was not run:\n%s\n%s", out, errs)
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{IncludeStale: true})
	if err != nil || len(rows) != 1 {
		t.Errorf("%d rows (%v), want the one trial that ran", len(rows), err)
	}
}
