package simtarget

import (
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials/field"
)

// DefaultCalibrateBudget bounds a trial's calibration probe when the spec
// gives no calibrate_budget (as `autoinfer sim calibrate --budget`).
const DefaultCalibrateBudget = 5 * time.Minute

// MaxCalibrateBudget is calibrate_budget's upper bound.
const MaxCalibrateBudget = 24 * time.Hour

// Calibration asks a trial on real servers to calibrate their profile
// first (calibrate: true): after provisioning and before the warm-up, the
// trial probes the first worker within CalibrateBudget (`autoinfer sim
// calibrate --observe`'s probe), fits the base profile's step model
// (profile, default DefaultProfile) to it, writes the profile file and
// replays the trial on it as its prediction. Only a target of real
// servers calibrates: the sim target's engines are their profile.
type Calibration struct {
	Calibrate bool `yaml:"calibrate" json:"calibrate,omitempty"`
	// CalibrateBudget bounds the probe in server time
	// (DefaultCalibrateBudget when calibrate is set).
	CalibrateBudget time.Duration `yaml:"calibrate_budget" json:"calibrate_budget,omitempty"`
	// CalibrateFile is where the fitted profile file goes; empty means
	// profiles/<trial>-<content hash>.yaml beside the spec, one file per
	// calibration. Relative paths are read from the spec's directory.
	CalibrateFile string `yaml:"calibrate_file" json:"calibrate_file,omitempty"`
}

// CalibrationRequest says whether the trial calibrates, and with what:
// the base profile's name, the probe's budget and the file asked for ("":
// the default place).
func (s *Source) CalibrationRequest() (base string, budget time.Duration, file string, ok bool) {
	if !s.Calibrate {
		return "", 0, "", false
	}
	base, budget = s.Profile, s.CalibrateBudget
	if base == "" {
		base = DefaultProfile
	}
	if budget == 0 {
		budget = DefaultCalibrateBudget
	}
	return base, budget, s.CalibrateFile, true
}

// Calibrated is the source of the profile a calibration wrote at path: what
// the trial's replay then runs.
func (s *Source) Calibrated(path string) Source { return Source{ProfileFile: path} }

// checkCalibration checks the calibrate keys: a built-in base (a profile
// file or a derivation is no step model to fit from scratch), no
// overrides (the fit sets the coefficients), one engine serving whole
// requests (the probe reads one engine's steps from its streams), and a
// budget within bounds. The keys besides calibrate need it.
func (s *Source) checkCalibration(topo target.Topology) error {
	var l field.Errors
	if !s.Calibrate {
		if s.CalibrateBudget != 0 {
			l.Add("calibrate_budget", "only with calibrate: true")
		}
		if s.CalibrateFile != "" {
			l.Add("calibrate_file", "only with calibrate: true")
		}
		return l.Err()
	}
	switch {
	case s.ProfileFile != "" || s.ModelConfig != "":
		l.Add("calibrate", "fits a built-in profile's step model: name the base with profile (default %s), not %s", DefaultProfile, s.sourceField())
	case len(s.ProfileOverrides) > 0:
		l.Add("calibrate", "the fit sets the coefficients: give no profile_overrides")
	case topo.Prefill > 0 || topo.Decode > 0:
		l.Add("calibrate", "probes one engine serving whole requests; prefill and decode workers are not (calibrate each role's server with autoinfer sim calibrate --observe)")
	}
	if s.CalibrateBudget < 0 {
		l.Add("calibrate_budget", "must be a positive duration such as 5m")
	}
	l.Check(field.AtMost("calibrate_budget", s.CalibrateBudget, MaxCalibrateBudget), field.MaxLen("calibrate_file", s.CalibrateFile, 4096))
	return l.Err()
}

// DefaultCalibration fills in the budget of a calibrating source, so the
// spec hash records the budget that runs.
func (s *Source) DefaultCalibration() {
	if s.Calibrate && s.CalibrateBudget == 0 {
		s.CalibrateBudget = DefaultCalibrateBudget
	}
}
