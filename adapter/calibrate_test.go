package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/calibrate"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/trials"
)

// calibrateSpec is one static worker (%s) that the trial calibrates first.
// The budget only bounds the probe: the tests' probe is one round of its
// plan (probeOnce), which ends well within it even on a loaded host.
const calibrateSpec = `
name: cal
seed: 5
target: {kind: static, hardware: loopback, workers: [%s], profile: fast, calibrate: true, calibrate_budget: 1m}
topology: {replicas: 1, engine: {model: sim-llama-3-8b}}
workload: {kind: random, input_len: 64, output_len: 8, num_prompts: 12, arrival: {kind: poisson, request_rate: 50}}
warmup: {requests: 2}
gate: {reference: none}
`

// The hidden truth's costs over the fast profile: a step of about 10 ms,
// as a GPU's decode step is, and a prefill that a 512-token newcomer
// lengthens by as much, so that a loaded host's lateness of a millisecond
// or two is noise to the fit rather than the signal (fast's own 1 ms steps
// are no more than that lateness).
const truthStepMs, truthPrefillUs, truthDecodeUs = 10, 20, 200

// truthArgs are the truth's costs as `sim serve` flags.
var truthArgs = fmt.Sprintf("--step-base-ms %d --prefill-us-per-token %d --decode-us-per-seq %d", truthStepMs, truthPrefillUs, truthDecodeUs)

// calibrateTrial is the spec's trial against a fresh simulated server of
// the truth, its spec read from dir.
func calibrateTrial(t *testing.T, dir string) trials.Trial {
	t.Helper()
	truth, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	truth.StepBaseMs, truth.PrefillUsPerToken, truth.DecodeUsPerSeq = truthStepMs, truthPrefillUs, truthDecodeUs
	tr := parseSpec(t, fmt.Sprintf(calibrateSpec, simtest.Start(t, sim.Options{Profile: truth})))[0]
	tr.SpecDir = dir
	return tr
}

// probeOnce runs the probe's plan once, at concurrency 1 and 2 (four
// groups: three fitted, one held out), which separates the coefficients
// and keeps each test to a few seconds, and lifts the fit's error and
// host-load bounds, so that the hook's flow runs whatever the host's load
// does to the fit (its accuracy is the calibrate package's tests').
func probeOnce(c *calibrate.Config) {
	c.Rounds, c.MaxConcurrency = 1, 2
	c.MaxError, c.MaxLagRatio, c.MaxTimerLate = 1e9, 1e9, 1e9
}

// The calibrate hook's flow, whatever the host's load does to the fit
// (probeOnce lifts its bounds): the probe runs before the measured run,
// the profile file lands in profiles/ beside the spec named by its content
// hash, and the trial's prediction runs it: the replay row records that
// hash and the HTTP path the probe measured.
func TestCalibratingTrialIsPredictedByItsCalibration(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	r.hooks.calibrate = probeOnce
	dir := t.TempDir()
	out := runOK(t, r, calibrateTrial(t, dir))
	c := out.Calibration
	if c == nil || c.Err != "" || c.Unfit != "" || c.ContentHash == "" {
		t.Fatalf("calibration %+v, want a fitted profile", c)
	}
	if want := filepath.Join(dir, "profiles", "cal-"+c.ContentHash+".yaml"); c.File != want {
		t.Errorf("profile file %s, want %s", c.File, want)
	}
	p, err := sim.ReadProfileFile(c.File)
	if err != nil || p.ContentHash != c.ContentHash {
		t.Fatalf("profile file: %v, hash %s (outcome says %s)", err, p.ContentHash, c.ContentHash)
	}
	if out.ReplayRow == 0 {
		t.Fatal("no prediction recorded")
	}
	v, err := led.Get(context.Background(), out.ReplayRow)
	if err != nil {
		t.Fatal(err)
	}
	var hc struct {
		Hash     string  `json:"content_hash"`
		Overhead float64 `json:"http_overhead_ms"`
	}
	if err := json.Unmarshal(v.HardwareConfig, &hc); err != nil || hc.Hash != c.ContentHash || hc.Overhead != c.HTTPOverheadMs || v.Hardware != "fast-calibrated" {
		t.Errorf("prediction row: hardware %q, config %s (%v); want fast-calibrated, hash %s and http_overhead_ms %v",
			v.Hardware, v.HardwareConfig, err, c.ContentHash, c.HTTPOverheadMs)
	}
	t.Logf("calibration %+v", c)
}

// A calibration that does not fit (its held-out error bound made
// impossible, the host-load bounds lifted so that this is the reason
// whatever the host's load) writes its file, marked unfit, and the trial
// runs and is recorded with no prediction: the uncalibrated base would
// pass for the calibrated one.
func TestUnfitCalibrationLeavesTheTrialUnpredicted(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	r.hooks.calibrate = func(c *calibrate.Config) {
		probeOnce(c)
		c.MaxError = 1e-12
	}
	dir := t.TempDir()
	out := runOK(t, r, calibrateTrial(t, dir))
	c := out.Calibration
	if c == nil || c.Err != "" || !strings.Contains(c.Unfit, "held-out") || out.ReplayRow != 0 {
		t.Fatalf("calibration %+v, replay row %d; want unfit for its held-out error and no prediction", c, out.ReplayRow)
	}
	data, err := os.ReadFile(c.File)
	if err != nil || !strings.Contains(string(data), "unfit: ") {
		t.Errorf("the unfit profile file (%v) does not say so:\n%s", err, data)
	}
}

// Ctrl-C during the probe ends the trial as interrupted, before any
// traffic is measured, and writes no profile file.
func TestInterruptedCalibrationWritesNothing(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.hooks.calibrate = func(c *calibrate.Config) { c.Progress = cancelAfterFirst{cancel} }
	dir := t.TempDir()
	tr := calibrateTrial(t, dir)
	start := time.Now()
	out, err := r.Run(ctx, tr)
	if err == nil || out.Summary.Completed > 0 {
		t.Fatalf("interrupted calibration: err %v, %d completed", err, out.Summary.Completed)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "profiles")); len(ents) != 0 {
		t.Errorf("an interrupted calibration left %v", ents)
	}
	t.Logf("interrupted after %v: %v", time.Since(start), err)
}

// cancelAfterFirst cancels at the probe's first progress line.
type cancelAfterFirst struct{ cancel context.CancelFunc }

func (c cancelAfterFirst) Write(p []byte) (int, error) { c.cancel(); return len(p), nil }

// A process target calibrates the same way: the trial probes the first
// `autoinfer sim serve` child it started and is predicted by the file.
func TestProcessTargetCalibrates(t *testing.T) {
	t.Parallel()
	bin := buildAutoinfer(t)
	r, led := newTestRunner(t)
	r.hooks.calibrate = probeOnce
	file := filepath.Join(t.TempDir(), "cal.yaml")
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "target: {kind: sim, profile: fast}", fmt.Sprintf(`target:
  kind: process
  hardware: test-host
  command: "'%s' sim serve --host {host} --port {port} --model {model} --profile fast %s {engine_args}"
  startup_timeout: 30s
  stop_grace_period: 5s
  log_dir: %s
  profile: fast
  calibrate: true
  calibrate_budget: 1m
  calibrate_file: %s`, bin, truthArgs, t.TempDir(), file), 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out := runOK(t, r, parseSpec(t, spec)[0])
	c := out.Calibration
	if c == nil || c.Err != "" || c.Unfit != "" || c.File != file || out.ReplayRow == 0 {
		t.Fatalf("calibration %+v, replay row %d; want the file at %s and a prediction", c, out.ReplayRow, file)
	}
	v, err := led.Get(context.Background(), out.ReplayRow)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v.HardwareConfig), `"content_hash":"`+c.ContentHash+`"`) {
		t.Errorf("prediction row's hardware config %s lacks the calibrated hash %s", v.HardwareConfig, c.ContentHash)
	}
}
