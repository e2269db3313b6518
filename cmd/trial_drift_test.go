package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 33 item 4: a real trial whose profile mispredicts it says so in
// the trial output, naming the metric. The servers run "fast"; the spec
// states their step costs ten times that (step_base_ms 10 against 1), so
// every decode step is predicted ten times too slow: TPOT drifts far past
// the 5 % a profile without a calibration states, in the table and in
// the JSON result, whatever the host's load adds.
func TestTrialOutputSaysWhenItsProfileDrifted(t *testing.T) {
	t.Parallel()
	urls := fastWorkers(t)
	dir := t.TempDir()
	db, spec := filepath.Join(dir, "l.db"), filepath.Join(dir, "s.yaml")
	wrong := ", profile: fast, profile_overrides: {step_base_ms: 10}"
	if err := os.WriteFile(spec, fmt.Appendf(nil, staticProfileSpec, urls[0], urls[1], wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "DRIFT: profile fast+overrides") || !strings.Contains(out, "p50_tpot_ms (") {
		t.Errorf("the trial output does not say the profile drifted on p50_tpot_ms:\n%s", out)
	}
	code, out, errs = run(t, "trial", "run", spec, "--ledger", db, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("trial run -o json: exit %d\n%s\n%s", code, out, errs)
	}
	var doc struct {
		Trials []struct {
			Drift *struct {
				Rows     []int64            `json:"measured_rows"`
				Exceeded []string           `json:"exceeded"`
				Recent   map[string]float64 `json:"recent_median"`
			} `json:"drift"`
		} `json:"trials"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Trials) != 1 || doc.Trials[0].Drift == nil {
		t.Fatalf("json result carries no drift:\n%s", out)
	}
	d := doc.Trials[0].Drift
	// Both runs' rows, the first's prediction included: over time.
	if len(d.Rows) != 2 || !slices.Contains(d.Exceeded, "p50_tpot_ms") {
		t.Errorf("drift over rows %v exceeded %v (recent medians %v), want both trials and p50_tpot_ms", d.Rows, d.Exceeded, d.Recent)
	}
	t.Logf("recent median errors: %v", d.Recent)
}

// A sim target's own replay is no model of a server: its real-time trial
// records the replay but shows no drift (what the replay misses there is
// the host's load, which HostOverloaded judges).
func TestSimTrialShowsNoDrift(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, spec := filepath.Join(dir, "l.db"), filepath.Join(dir, "s.yaml")
	sim := strings.Replace(fmt.Sprintf(staticProfileSpec, "x", "y", ""), "{kind: static, hardware: test-sim, workers: [x, y]}", "{kind: sim, profile: fast}", 1)
	if err := os.WriteFile(spec, []byte(sim), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	var doc struct {
		Trials []struct {
			ReplayRow int64           `json:"replay_row"`
			Drift     json.RawMessage `json:"drift"`
		} `json:"trials"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Trials) != 1 || doc.Trials[0].ReplayRow == 0 || doc.Trials[0].Drift != nil {
		t.Errorf("sim trial: %+v; want a replay and no drift", doc.Trials)
	}
}
