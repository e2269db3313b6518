package cmd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// shedSpec is a two-replica sim trial under a burst; %s is the router.
const shedSpec = `name: %s
seed: 5
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b}
router: %s
workload:
  kind: random
  input_len: 64
  output_len: 16
  num_prompts: 60
  arrival: {kind: poisson, request_rate: 400}
warmup: {requests: 2}
gate: {reference: none}
`

// Acceptance 4 (shed flagging, issue 31) through trial run and ledger
// compare: the same burst through a router that refuses what exceeds four
// requests in flight (no queue) sheds with 503 (the trial is recorded as
// failed, RouterPoolExhausted); ledger compare of the two rows reports both
// sides' shed rates and, when the shedding side comes out better, flags it.
func TestLedgerCompareFlagsTheSheddingSide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	for _, c := range []struct {
		name, router string
		exit         int
	}{
		{"open", "{policy: least_loaded}", ExitOK},
		{"shedding", "{policy: least_loaded, max_concurrent_requests: 4, queue_size: 0}", ExitFailed},
	} {
		spec := filepath.Join(dir, c.name+".yaml")
		writeFile(t, spec, fmt.Sprintf(shedSpec, c.name, c.router))
		if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != c.exit {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", c.name, code, c.exit, out, errs)
		}
	}
	code, out, errs := run(t, "ledger", "compare", "1", "2", "--ledger", db, "--output", "json")
	if code != ExitOK {
		t.Fatalf("compare: exit %d\n%s", code, errs)
	}
	var got struct {
		AShed struct{ Offered, Shed int } `json:"a_shed"`
		BShed struct {
			Offered, Shed int
			Rate          float64
		} `json:"b_shed"`
		Flag    string `json:"shed_flag"`
		Metrics []struct {
			Metric, Better string
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.AShed.Offered != 60 || got.AShed.Shed != 0 || got.BShed.Offered != 60 || got.BShed.Shed == 0 {
		t.Fatalf("shed: A %+v, B %+v; want none of 60 on A and some of 60 on B", got.AShed, got.BShed)
	}
	wins := map[string]int{}
	for _, m := range got.Metrics {
		wins[m.Better]++
	}
	t.Logf("B shed %d of 60; metric verdicts %v; flag %q", got.BShed.Shed, wins, got.Flag)
	switch {
	case wins["B"] > wins["A"] && !strings.Contains(got.Flag, "B is better on more figures but shed"):
		t.Errorf("B wins %d figures to A's %d after shedding, but is not flagged: %q", wins["B"], wins["A"], got.Flag)
	case wins["B"] <= wins["A"] && got.Flag != "":
		t.Errorf("flag %q although the shedding side is not the better one", got.Flag)
	}
	_, table, _ := run(t, "ledger", "compare", "1", "2", "--ledger", db)
	if !strings.Contains(table, "shed (503/429 of offered): A 0.0 % (0 of 60), B ") {
		t.Errorf("table output lacks the shed rates:\n%s", table)
	}
}
