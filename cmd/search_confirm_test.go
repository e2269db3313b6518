package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// confirmSpec is a two-candidate search with a second of real-time
// traffic per confirmation.
const confirmSpec = `
name: confirm
seed: 5
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 2, engine: {model: sim-llama-3-8b}}
router: {policy: round_robin}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: 16, arrival: {kind: poisson, request_rate: 16}}
warmup: {requests: 2}
search:
  space:
    router.policy: [round_robin, cache_aware]
  objective:
    maximize: output_throughput_per_gpu
`

// TestSearchConfirmPairs: --confirm 2 runs both candidates again in real
// time as ordinary real rows, each linked to its virtual row; the output
// gives every metric's prediction, measurement and ratio; ledger compare
// --predicted lists the same two pairs.
func TestSearchConfirmPairs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec, db := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "l.db")
	if err := os.WriteFile(spec, []byte(confirmSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "search", spec, "--ledger", db, "--confirm", "2", "--parallel", "1",
		"--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"confirmed in real time", "virtual row 2 → real row 3", "virtual row 1 → real row 4",
		"p99_e2el_ms", "request_goodput", "host during the real-time run: p99 schedule delay", "output_throughput_per_gpu", "measured/predicted", "confirmed candidates within 5 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Equal predictions rank by name: cache_aware (row 2) first.
	for id, by := range map[int64]int64{3: 2, 4: 1} {
		m, err := l.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		v, err := l.Get(context.Background(), by)
		if err != nil {
			t.Fatal(err)
		}
		if m.Virtual() || m.PredictedBy == nil || *m.PredictedBy != by || !v.Virtual() || m.WorkloadHash != v.WorkloadHash || m.Completed != v.Completed {
			t.Errorf("row %d: clock %s predicted_by %d (want %d, virtual), workload %s/%s, completed %d/%d",
				id, m.Clock, deref(m.PredictedBy), by, m.WorkloadHash, v.WorkloadHash, m.Completed, v.Completed)
		}
	}
	pairs := predictedPairs(t, db)
	if len(pairs) != 2 || pairs[0].Measured != 4 || pairs[0].Predicted != 1 || len(pairs[0].Metrics) != len(ledger.PredictionMetrics()) {
		t.Fatalf("pairs %+v, want 2 with %d metrics each", pairs, len(ledger.PredictionMetrics()))
	}
	// The HTML report shows the pairs of its selected rows, and no such
	// section without them.
	for ids, want := range map[string]bool{"3,4": true, "1": false} {
		html := filepath.Join(dir, "r"+ids+".html")
		args := append([]string{"ledger", "report", "--ledger", db, "--html", html}, strings.Split(ids, ",")...)
		if code, _, errs := run(t, args...); code != ExitOK {
			t.Fatalf("report %s: exit %d: %s", ids, code, errs)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(page), `<section id="predicted"`); got != want {
			t.Errorf("report of rows %s: predicted section %v, want %v", ids, got, want)
		}
		if want && !strings.Contains(string(page), "<td>p99_ttft_ms</td>") {
			t.Errorf("report of rows %s: no p99_ttft_ms line in the predicted table", ids)
		}
	}
	if code, _, errs := run(t, "ledger", "compare", "--predicted", "1", "--ledger", db); code != ExitUsage {
		t.Errorf("compare --predicted 1: exit %d (%s), want usage", code, errs)
	}
	if code, _, errs := run(t, "ledger", "compare", "1", "3", "--where", "clock=real", "--ledger", db); code != ExitUsage || !strings.Contains(errs, "--where") {
		t.Errorf("compare A B --where: exit %d (%s), want usage naming --where", code, errs)
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestSearchStrategyFlag: --strategy halving runs the rounds and says so;
// an unknown strategy is a usage error naming the flag.
func TestSearchStrategyFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec, db := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "l.db")
	if err := os.WriteFile(spec, []byte(confirmSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "search", spec, "--ledger", db, "--strategy", "halving")
	if code != ExitOK || !strings.Contains(out, "successive halving, 3 rounds") || !strings.Contains(out, "round 1: 2 candidates on 11.1 % of the traffic (0 resumed), 1 kept") {
		t.Errorf("halving: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := run(t, "search", spec, "--ledger", db, "--strategy", "bayes"); code != ExitUsage || !strings.Contains(errs, "--strategy") {
		t.Errorf("--strategy bayes: exit %d: %s", code, errs)
	}
}

// predictedPair is one pair of `ledger compare --predicted -o json`.
type predictedPair struct {
	Measured  int64 `json:"measured_row"`
	Predicted int64 `json:"predicted_row"`
	Metrics   []ledger.MetricError
}

// predictedPairs runs `ledger compare --predicted -o json` on db.
func predictedPairs(t *testing.T, db string) []predictedPair {
	t.Helper()
	code, out, errs := run(t, "ledger", "compare", "--predicted", "--ledger", db, "-o", "json")
	if code != ExitOK {
		t.Fatalf("compare --predicted: exit %d: %s", code, errs)
	}
	var got struct{ Pairs []predictedPair }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	return got.Pairs
}
