package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger/report"
)

// controlSpec compares two policies on shared prefixes, each with its
// zero-reuse control arm.
const controlSpec = `name: reuse
seed: 9
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b}
workload:
  kind: shared_prefix
  num_groups: 2
  prompts_per_group: 8
  system_prompt_len: 256
  question_len: 16
  output_len: 8
  num_prompts: 32
  arrival: {kind: poisson, request_rate: 100}
warmup: {requests: 2}
gate: {reference: none}
matrix:
  router.policy: [round_robin, cache_aware]
control: zero_reuse
`

// Acceptance 4 (zero-reuse control, issue 31) through trial run and ledger
// compare: the sweep records a control arm per policy whose prefix-cache
// hit rate is ~0 while its arm's is not, and ledger compare shows each
// side's gain over its own control.
func TestLedgerCompareShowsGainOverControl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	spec := filepath.Join(dir, "reuse.yaml")
	writeFile(t, spec, controlSpec)
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	a, b := "reuse/router.policy=round_robin", "reuse/router.policy=cache_aware"
	code, out, errs := run(t, "ledger", "compare", a, b, "--ledger", db, "--output", "json")
	if code != ExitOK {
		t.Fatalf("compare: exit %d\n%s", code, errs)
	}
	var got struct {
		Controls []struct {
			Side    string
			Control struct{ Names []string }
			Metrics []struct {
				Metric string
				A, B   *float64
				Diff   *float64
			}
		} `json:"controls"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Controls) != 2 {
		t.Fatalf("%d controls, want one per side\n%s", len(got.Controls), out)
	}
	for i, name := range []string{a, b} {
		g := got.Controls[i]
		if g.Side != string(rune('A'+i)) || len(g.Control.Names) != 1 || g.Control.Names[0] != name+",control=zero_reuse" {
			t.Fatalf("control %d: side %s, trials %v; want %s's control", i, g.Side, g.Control.Names, name)
		}
		found := false
		for _, m := range g.Metrics {
			if m.Metric != "prefix_cache_hit_rate" {
				continue
			}
			found = true
			if m.A == nil || m.B == nil || m.Diff == nil {
				t.Fatalf("%s: hit rates control %v, arm %v", name, m.A, m.B)
			}
			t.Logf("%s: prefix-cache hit rate %.3f, its zero-reuse control %.3f, gain %.3f", name, *m.B, *m.A, *m.Diff)
			if *m.A > 0.01 || *m.B < 0.2 {
				t.Errorf("%s: control's hit rate %.3f (want ~0), arm's %.3f (want > 0.2)", name, *m.A, *m.B)
			}
		}
		if !found {
			t.Errorf("%s: no prefix_cache_hit_rate beside its control", name)
		}
	}
	_, table, _ := run(t, "ledger", "compare", a, b, "--ledger", db)
	for _, want := range []string{"control of A: " + a + ",control=zero_reuse", "control_a  prefix_cache_hit_rate", "control_b  prefix_cache_hit_rate"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// The HTML report's comparison carries the same gains.
	html := filepath.Join(dir, "r.html")
	if code, out, errs := run(t, "ledger", "report", "--ledger", db, "--html", html); code != ExitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	const open = `<script id="report-data" type="application/json">`
	start := strings.Index(string(page), open)
	end := strings.Index(string(page)[max(start, 0):], "</script>")
	var data report.Report
	if start < 0 || end < 0 || json.Unmarshal(page[start+len(open):start+end], &data) != nil {
		t.Fatalf("no report data in the page")
	}
	controlled := 0
	for _, p := range data.Pairs {
		for _, g := range p.Controls {
			if strings.HasSuffix(g.Control.Names[0], ",control=zero_reuse") {
				controlled++
			}
		}
	}
	// Four rows, six pairs; a pair side that is not a control has one.
	if controlled != 6 {
		t.Errorf("%d sides of the report's pairs show a gain over control, want 6 (each arm in its 3 pairs)", controlled)
	}
}
