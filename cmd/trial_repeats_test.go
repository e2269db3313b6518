package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// repeatsSpec is the CI smoke spec swept over two policies, each trial
// repeated three times, its 48 requests offered at 200/s instead of 50/s
// (what this test checks is how replicates group, not the figures).
func repeatsSpec(t *testing.T, dir string) string {
	t.Helper()
	spec, err := os.ReadFile("../trials/examples/ci-smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The latency assertion is the smoke test's, not this test's subject:
	// six runs on a loaded machine should not hang on it.
	body := strings.Replace(string(spec), "  - p99_ttft_ms < 1000\n", "", 1)
	faster := strings.Replace(body, "request_rate: 50\n", "request_rate: 200\n", 1)
	if body == string(spec) || faster == body {
		t.Fatal("ci-smoke.yaml changed: no p99_ttft_ms assertion to drop or request_rate 50 to raise")
	}
	body = faster
	path := filepath.Join(dir, "repeats.yaml")
	writeFile(t, path, body+"\nrepeats: 3\nmatrix:\n  router.policy: [round_robin, least_loaded]\n")
	return path
}

// Issue 19, acceptance 5: repeats: 3 through the CLI against the sim gives
// one result per trial with intervals across its replicates, and no
// replicate is stale; compare and pareto then treat each group as one.
func TestTrialRunRepeats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	if code, out, errs := run(t, "trial", "validate", repeatsSpec(t, dir)); code != ExitOK || !strings.Contains(out, "2 trials (sweep ") ||
		!strings.Contains(out, ", 6 runs with repeats") {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := run(t, "trial", "run", repeatsSpec(t, dir), "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var res struct {
		Trials []struct {
			Name      string
			RowID     int64
			Seed      int64
			Replicate struct {
				Group string `json:"replicate_group"`
				Index int    `json:"replicate_index"`
			}
		}
		Groups      []ledger.GroupResult `json:"replicate_groups"`
		Comparisons []sweepComparison
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decoding the summary: %v\n%s", err, out)
	}
	if len(res.Trials) != 6 || len(res.Groups) != 2 {
		t.Fatalf("%d runs and %d groups, want 6 runs in 2 groups", len(res.Trials), len(res.Groups))
	}
	for i, r := range res.Trials {
		g := res.Groups[i/3]
		if r.Replicate.Group != g.Group || r.Replicate.Index != i%3 || r.RowID != g.IDs[i%3] {
			t.Errorf("run %d: %+v, want replicate %d of %s (row %d)", i, r, i%3, g.Group, g.IDs[i%3])
		}
	}
	if s := res.Trials[0].Seed; s != 1 || res.Trials[1].Seed == s || res.Trials[3].Seed != s || res.Trials[4].Seed != res.Trials[1].Seed {
		t.Errorf("seeds %d %d / %d %d: want replicate 0 on the spec's seed 1, replicate i alike across the sweep",
			res.Trials[0].Seed, res.Trials[1].Seed, res.Trials[3].Seed, res.Trials[4].Seed)
	}

	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Stale || r.Replicates != 3 || r.ReplicateGroup == "" {
			t.Errorf("row %d: stale %v (%s), replicate %+v", r.ID, r.Stale, r.StaleReason, r.Replicate)
		}
	}
	for _, g := range res.Groups {
		e, ok := g.Metric("output_throughput")
		if !g.Complete() || g.OK != 3 || !ok || e.N != 3 || e.Lo > e.Mean || e.Hi < e.Mean {
			t.Fatalf("group %+v: want complete with an interval around the mean", g)
		}
		// The mean is the replicates' rows' mean, as recorded.
		var sum float64
		for _, r := range rows {
			if r.ReplicateGroup == g.Group {
				sum += r.OutputThroughput
			}
		}
		if d := sum/3 - e.Mean; d > 1e-9 || d < -1e-9 {
			t.Errorf("group %s: mean output_throughput %g, rows average %g", g.Group, e.Mean, sum/3)
		}
	}
	if len(res.Comparisons) != 1 || res.Comparisons[0].Comparison.A.Resolved != "group" || len(res.Comparisons[0].Comparison.B.IDs) != 3 {
		t.Errorf("comparisons %+v, want the least_loaded group against the round_robin group", res.Comparisons)
	}

	// The ledger commands see one point, one side, per group.
	code, out, errs = run(t, "ledger", "pareto", "--ledger", db, "--x", "p99_tpot_ms", "--y", "output_throughput", "-o", "json")
	if code != ExitOK {
		t.Fatalf("pareto: exit %d\n%s", code, errs)
	}
	var front struct{ Front []ledger.Point }
	if err := json.Unmarshal([]byte(out), &front); err != nil {
		t.Fatal(err)
	}
	if len(front.Front) == 0 {
		t.Fatalf("empty front: %s", out)
	}
	for _, p := range front.Front {
		if p.CI == nil || p.Replicates != 3 || !slices.ContainsFunc(res.Groups, func(g ledger.GroupResult) bool { return g.Group == p.ReplicateGroup }) {
			t.Errorf("pareto point %+v: want a replicate group with its interval", p)
		}
	}
	code, out, errs = run(t, "ledger", "compare", "--ledger", db, res.Groups[0].Group, res.Groups[1].Group)
	if code != ExitOK || !strings.Contains(out, "replicate group "+res.Groups[0].Group) || !strings.Contains(out, "±") {
		t.Errorf("compare: exit %d\n%s\n%s", code, out, errs)
	}
}

// A replicate that fails withholds its group's figures: with every
// replicate failing an assertion the group says 0 of 2 ok and no interval.
func TestTrialRunRepeatsWithFailedReplicates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	code, out, errs := run(t, "trial", "run", "../trials/examples/ci-smoke.yaml", "--ledger", db, "--repeats", "2",
		"--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag, "--assert", "p99_ttft_ms < 0.001")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFailed, out, errs)
	}
	for _, want := range []string{"0 of 2 replicates ok", "no mean or interval", "AssertionViolated"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, _, errs = run(t, "trial", "run", "../trials/examples/ci-smoke.yaml", "--ledger", db, "--repeats", "0")
	if code != ExitUsage || !strings.Contains(errs, "--repeats") {
		t.Errorf("--repeats 0: exit %d, stderr %q", code, errs)
	}
}
