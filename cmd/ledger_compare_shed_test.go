package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
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
// sides' shed rates and flags every figure the shedding side wins. The
// shed rate is a column and a pareto axis.
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
	// Each trial's virtual replay is a row of its own name: the shedding
	// trial failed, so it is compared by its id (its name resolves to no ok
	// real row, and never to its replay).
	shedID := realRowID(t, db, "shedding")
	code, out, errs := run(t, "ledger", "compare", "open", shedID, "--ledger", db, "--output", "json")
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
		Intervals []struct {
			Metric, Better string
		} `json:"intervals"`
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
	for _, iv := range got.Intervals {
		wins[iv.Better]++
	}
	t.Logf("B shed %d of 60; metric verdicts %v; flag %q", got.BShed.Shed, wins, got.Flag)
	switch {
	case wins["B"] > 0 && !strings.Contains(got.Flag, fmt.Sprintf("yet is better on %d figure(s)", wins["B"])):
		t.Errorf("B wins %d figures after shedding, but the flag does not say so: %q", wins["B"], got.Flag)
	case wins["B"] == 0 && got.Flag != "":
		t.Errorf("flag %q although the shedding side wins nothing", got.Flag)
	}
	// The shed rate is also a column and an axis.
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := 0.0
		if r.Name == "shedding" {
			want = got.BShed.Rate
		}
		if r.ShedRate == nil || *r.ShedRate != want {
			t.Errorf("row %s: shed_rate %v, want %v", r.Name, r.ShedRate, want)
		}
	}
	if code, out, errs := run(t, "ledger", "pareto", "--x", "shed_rate", "--y", "mean_ttft_ms", "--ledger", db); code != ExitOK || !strings.Contains(out, "open") {
		t.Errorf("pareto on shed_rate: exit %d\n%s\n%s", code, out, errs)
	}
	_, table, _ := run(t, "ledger", "compare", "open", shedID, "--ledger", db)
	if !strings.Contains(table, "shed (503/429 of offered): A 0.0 % (0 of 60), B ") {
		t.Errorf("table output lacks the shed rates:\n%s", table)
	}
}

// realRowID is the id of the one real-time row named name in db.
func realRowID(t *testing.T, db, name string) string {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{Name: name, IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d real rows named %s, want 1", len(rows), name)
	}
	return strconv.FormatInt(rows[0].ID, 10)
}
