package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/calibrate"
	"github.com/autoinfer/autoinfer/trials"
)

// calibrating is target options of real servers that can calibrate their
// profile before a trial (simtarget.Source's calibrate keys, on the static
// and process targets).
type calibrating interface {
	// CalibrationRequest says whether to calibrate, the base profile, the
	// probe's budget and the profile file asked for ("": the default).
	CalibrationRequest() (base string, budget time.Duration, file string, ok bool)
	// WithProfileFile is a copy of the options whose profile is the file
	// at path.
	WithProfileFile(path string) target.Options
}

// Calibration is what a trial's calibration did (calibrate: true): the
// profile file it wrote and that profile's content hash (the one the
// trial's prediction row records), the fit's held-out error, or why no
// profile came of it.
type Calibration struct {
	File        string             `json:"file,omitempty"`
	ContentHash string             `json:"content_hash,omitempty"`
	Groups      int                `json:"groups,omitempty"`
	HeldOut     map[string]float64 `json:"held_out_error,omitempty"`
	// HTTPOverheadMs is the HTTP path the probe measured outside the
	// engine's steps; the replay adds it (as http_overhead_ms) when the
	// spec states none. OverloadedGroups is how many probe groups the host
	// ran late.
	HTTPOverheadMs   float64 `json:"http_overhead_ms,omitempty"`
	OverloadedGroups int     `json:"overloaded_groups,omitempty"`
	// Unfit is why the probe gave no profile to predict with (the step
	// model does not describe the server, the host ran the probe late, too
	// few groups within the budget, ...: calibrate.Result.Unfit); the file
	// says so and no prediction runs on it. Err is why the calibration
	// could not run or be written (the server refused the probe, a write
	// failed): there is no file.
	Unfit string `json:"unfit,omitempty"`
	Err   string `json:"error,omitempty"`
}

// calibrate runs the probe against the first worker when the target asks
// for it, writes the fitted profile file and keeps the options the
// trial's replay then runs (tr.calibrated). A calibration that fails or
// does not fit leaves the trial to run unpredicted, and says why on the
// outcome; only an interruption stops the trial (its error is returned).
func (tr *trialRun) calibrate(ctx context.Context, dep *target.Deployment) error {
	c, ok := tr.t.Target.Options.(calibrating)
	if !ok {
		return nil
	}
	base, budget, file, asked := c.CalibrationRequest()
	if !asked {
		return nil
	}
	cal := &Calibration{}
	tr.calibration = cal
	maxConc := 16
	if n := tr.t.Topology.Engine.MaxNumSeqs; n > 0 {
		maxConc = min(maxConc, n)
	}
	tr.log.Info("calibrating", "trial", tr.t.Name, "worker", dep.Workers[0].URL, "base", base, "budget", budget)
	cfg := calibrate.Config{HTTP: &http.Client{}, URL: dep.Workers[0].URL, Base: base,
		Hardware: tr.t.Target.Hardware, Seed: uint64(tr.t.Seed), Budget: budget, MaxConcurrency: maxConc,
		Engine: tr.t.Topology.Engine, Progress: tr.opts.CalibrationProgress}
	if tr.hooks.calibrate != nil {
		tr.hooks.calibrate(&cfg)
	}
	res, err := calibrate.Calibrate(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("calibrating: %w", err)
		}
		cal.Err = err.Error()
		tr.log.Warn("calibration failed: the trial runs without a prediction", "trial", tr.t.Name, "err", err)
		return nil
	}
	cal.Groups, cal.HeldOut, cal.Unfit, cal.OverloadedGroups = len(res.Observed), res.HeldOut, res.Unfit, res.Overloaded
	cal.HTTPOverheadMs = float64(res.PathOverhead.Microseconds()) / 1e3
	var prof sim.Profile
	hash := ""
	if res.Unfit == "" {
		if prof, err = sim.ParseProfileFile(res.File); err != nil {
			cal.Err = fmt.Sprintf("the fitted profile does not parse: %v", err)
			return nil
		}
		hash = prof.ContentHash
	} else {
		sum := sha256.Sum256(res.File)
		hash = hex.EncodeToString(sum[:8])
	}
	path, err := calibrationPath(tr.t, file, hash)
	if err == nil {
		err = writeAtomic(path, res.File)
	}
	if err != nil {
		cal.Err = fmt.Sprintf("writing the profile file: %v", err)
		tr.log.Warn("calibration not written: the trial runs without a prediction", "trial", tr.t.Name, "err", err)
		return nil
	}
	cal.File = path
	if res.Unfit != "" {
		tr.log.Warn("calibration unfit: the trial runs without a prediction", "trial", tr.t.Name, "file", path, "unfit", res.Unfit)
		return nil
	}
	cal.ContentHash = hash
	tr.calibrated = c.WithProfileFile(path)
	tr.log.Info("calibrated", "trial", tr.t.Name, "file", path, "content_hash", hash, "held_out", res.HeldOut)
	return nil
}

// calibrationPath is where a calibration's profile file goes: the path
// the spec asks for (relative to the spec's directory), else
// profiles/<trial>-<content hash>.yaml beside the spec, so each
// calibration keeps its own file and the rows that name its hash can
// find it. The path is absolute: the replay reads it from anywhere.
func calibrationPath(t trials.Trial, file, hash string) (string, error) {
	if file == "" {
		file = filepath.Join("profiles", slug(t.Name)+"-"+hash+".yaml")
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(t.SpecDir, file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(filepath.Dir(abs), 0o755)
}

// writeAtomic writes data beside path and renames it there: a reader never
// sees half a profile.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// replayTrial is the trial its replay runs: on a calibrated target, the
// same trial naming the calibrated profile file, with the HTTP path the
// probe measured when the spec states none (http_overhead_ms; a router's
// hop, which the probe did not take, is not in it). ok is false when the
// target asked for a calibration that gave no profile: a replay on the
// uncalibrated base would pass for the calibrated prediction.
func (tr *trialRun) replayTrial() (trials.Trial, bool) {
	if tr.calibration == nil {
		return tr.t, true
	}
	if tr.calibrated == nil {
		return trials.Trial{}, false
	}
	t := tr.t
	t.Target.Options = tr.calibrated
	if t.HTTPOverheadMs == 0 {
		t.HTTPOverheadMs = tr.calibration.HTTPOverheadMs
	}
	return t, true
}
