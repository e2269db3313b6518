package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/ledger"
)

// TestTrialRunSweep runs a sweep spec end to end: a synchronous run, a
// throughput run and two rates between, each its own ledger row of one
// sweep with the same request stream; the output names the knee.
func TestTrialRunSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(spec, []byte(`name: sw
topology:
  replicas: 1
  engine:
    model: m
workload:
  kind: random
  input_len: 32
  output_len: 4
  num_prompts: 12
  arrival:
    kind: sweep
    rates: 2
warmup:
  requests: 2
slo:
  e2el_ms: 60000
gate:
  reference: none
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "trial", "validate", spec)
	if code != ExitOK || !strings.Contains(out, "sweep: synchronous, throughput, 2 rates") {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	db := filepath.Join(dir, "ledger.db")
	code, out, errs = run(t, "trial", "run", spec, "--ledger", db, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	var doc struct {
		Sweeps []struct {
			SweepID  string  `json:"sweep_id"`
			SyncRate float64 `json:"sync_rate"`
			MaxRate  float64 `json:"max_rate"`
			Knee     int     `json:"knee"`
			Note     string  `json:"note"`
			Points   []struct {
				Role  string  `json:"role"`
				Rate  float64 `json:"rate"`
				RowID int64   `json:"RowID"`
			} `json:"points"`
		} `json:"sweeps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Sweeps) != 1 {
		t.Fatalf("decoding the sweep (%v):\n%s", err, out)
	}
	sw := doc.Sweeps[0]
	roles := []string{}
	for _, p := range sw.Points {
		roles = append(roles, p.Role)
	}
	if strings.Join(roles, ",") != "synchronous,throughput,rate,rate" {
		t.Fatalf("runs %v, want synchronous, throughput and 2 rates", roles)
	}
	r1, r2 := sw.Points[2].Rate, sw.Points[3].Rate
	if !(sw.SyncRate < r1 && r1 < r2 && r2 < sw.MaxRate) {
		t.Errorf("rates %v, %v not strictly between sync %v and max %v", r1, r2, sw.SyncRate, sw.MaxRate)
	}
	if sw.Knee != 3 || !strings.Contains(sw.Note, "highest rate swept") {
		t.Errorf("knee %d (%s), want the highest rate (every request meets a 60 s SLO)", sw.Knee, sw.Note)
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{SweepID: sw.SweepID})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows with sweep id %s, want 4", len(rows), sw.SweepID)
	}
	for _, r := range rows {
		if r.Status != ledger.StatusOK || r.Stale || r.WorkloadHash == "" {
			t.Errorf("row %d %s: status %s stale %v", r.ID, r.Name, r.Status, r.Stale)
		}
	}
	// ledger pareto draws the curve of the two rates with the spec's SLO.
	png := filepath.Join(dir, "curve.png")
	code, _, errs = run(t, "ledger", "pareto", "--ledger", db, "--sweep", sw.SweepID, "--sweep-plot", png)
	if code != ExitOK || !strings.Contains(errs, "sweep curve sw (2 rates): knee at") {
		t.Fatalf("pareto --sweep-plot: exit %d\n%s", code, errs)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("curve.png is not a PNG (%v)", err)
	}
}

// TestPrintTrialSweepsMarksTheKnee: the table has one line per run with
// its row, the knee marked, and the note.
func TestPrintTrialSweepsMarksTheKnee(t *testing.T) {
	sw := adapter.SweepOutcome{Name: "sw", SweepID: "abc", Threshold: 0.9, Knee: 2, Note: "knee at 5 req/s (90% of requests within the SLOs); the next rate, 8 req/s, had 40.0%",
		Points: []adapter.SweepPoint{
			{Outcome: adapter.Outcome{RowID: 1}, Role: "synchronous", Attainment: 1},
			{Outcome: adapter.Outcome{RowID: 2}, Role: "throughput", Attainment: 0.1},
			{Outcome: adapter.Outcome{RowID: 3}, Role: "rate", Rate: 5, Attainment: 0.95, Meets: true},
			{Outcome: adapter.Outcome{RowID: 4}, Role: "rate", Rate: 8, Attainment: 0.4},
		}}
	var b strings.Builder
	printTrialSweeps(&b, []adapter.SweepOutcome{sw})
	lines := strings.Split(b.String(), "\n")
	var knee []string
	for _, l := range lines {
		if strings.HasSuffix(l, "<- knee") {
			knee = append(knee, l)
		}
	}
	if len(knee) != 1 || !strings.Contains(knee[0], " 3 ") || !strings.Contains(knee[0], "95.0%") {
		t.Errorf("knee lines %q, want one: row 3 at 95%%\n%s", knee, b.String())
	}
	if !strings.Contains(b.String(), "Knee: knee at 5 req/s") || !strings.Contains(b.String(), "sweep id abc") {
		t.Errorf("table lacks the note or the sweep id:\n%s", b.String())
	}
}
