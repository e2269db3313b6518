package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/sim"
)

// calibrateSpec runs a second of traffic against one static worker that
// the trial calibrates first (%s: its URL).
const calibrateSpec = `
name: calibrated
seed: 9
target: {kind: static, hardware: loopback, workers: [%s], profile: fast, calibrate: true, calibrate_budget: 8s}
topology: {replicas: 1, engine: {model: truth}}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: 16, arrival: {kind: poisson, request_rate: 16}}
warmup: {requests: 2}
gate: {reference: none}
`

// Issue 33 item 1: a trial on a static target with calibrate: true probes
// its server (a hidden-truth `sim serve` over real loopback) within the
// budget, showing progress, writes the fitted profile file beside the
// spec, and its row's prediction runs that profile: the prediction row
// records the file's content hash. A host too loaded for the fit gets a
// file marked unfit (with too few groups, no fit in it) and no
// prediction, which the output says; the test then checks that instead.
func TestTrialCalibratesItsStaticTarget(t *testing.T) {
	t.Parallel()
	u := serveTruth(t, "--profile", "fast", "--model", "truth", "--step-base-ms", "4", "--cpu-us-per-seq", "40",
		"--prefill-us-per-token", "4", "--decode-us-per-seq", "150", "--decode-ns-per-context-token", "200")
	dir := t.TempDir()
	db, spec := filepath.Join(dir, "l.db"), filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(spec, fmt.Appendf(nil, calibrateSpec, u), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "probe: round 1 group 1/") || !strings.Contains(errs, "budget") {
		t.Errorf("no calibration progress on stderr:\n%s", errs)
	}
	var doc struct {
		Trials []struct {
			RowID       int64 `json:"RowID"`
			ReplayRow   int64 `json:"replay_row"`
			Calibration *struct {
				File        string             `json:"file"`
				ContentHash string             `json:"content_hash"`
				HeldOut     map[string]float64 `json:"held_out_error"`
				Unfit       string             `json:"unfit"`
				Err         string             `json:"error"`
			} `json:"calibration"`
		} `json:"trials"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Trials) != 1 || doc.Trials[0].Calibration == nil {
		t.Fatalf("no calibration on the result:\n%s", out)
	}
	r, c := doc.Trials[0], doc.Trials[0].Calibration
	if c.Err != "" {
		// A probe that failed (a request the server refused; too few
		// groups is an unfit verdict, below): the trial must then be
		// unpredicted and say why.
		if r.ReplayRow != 0 || !strings.Contains(c.Err, "probe") {
			t.Fatalf("calibration failed (%s) and replay row %d; want a probe's failure and no prediction", c.Err, r.ReplayRow)
		}
		t.Logf("no fit on this host: %s", c.Err)
		return
	}
	if filepath.Dir(c.File) != filepath.Join(dir, "profiles") {
		t.Errorf("profile file at %s, want it in profiles/ beside the spec", c.File)
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held-out error %v; profile file:\n%s", c.HeldOut, data)
	checkOverloadFlag(t, data)
	if c.Unfit != "" {
		if r.ReplayRow != 0 || !strings.Contains(string(data), "unfit: ") {
			t.Errorf("an unfit calibration: replay row %d (want none), file marked unfit: %v", r.ReplayRow, strings.Contains(string(data), "unfit: "))
		}
		t.Logf("unfit on this host: %s", c.Unfit)
		return
	}
	p, err := sim.ParseProfileFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.ContentHash != c.ContentHash || !strings.Contains(c.File, c.ContentHash) {
		t.Errorf("file %s, hash %s; the profile's content hash is %s", c.File, c.ContentHash, p.ContentHash)
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, err := l.Get(context.Background(), r.RowID)
	if err != nil {
		t.Fatal(err)
	}
	if m.PredictedBy == nil || *m.PredictedBy != r.ReplayRow {
		t.Fatalf("row %d: predicted_by %v, want the replay row %d", m.ID, m.PredictedBy, r.ReplayRow)
	}
	v, err := l.Get(context.Background(), r.ReplayRow)
	if err != nil {
		t.Fatal(err)
	}
	var hc struct {
		Hash string `json:"content_hash"`
	}
	if err := json.Unmarshal(v.HardwareConfig, &hc); err != nil || hc.Hash != c.ContentHash || v.Hardware != "fast-calibrated" {
		t.Errorf("prediction row %d: hardware %q, content hash %q (%v); want fast-calibrated and %s", v.ID, v.Hardware, hc.Hash, err, c.ContentHash)
	}
}
