package simtarget

import (
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target"
)

// The calibrate keys: a built-in base (named or the default), no
// overrides, one engine serving whole requests, a budget within bounds;
// the budget and file only with calibrate; never on the sim target. Each
// problem names its key.
func TestCalibrationKeysAreChecked(t *testing.T) {
	t.Parallel()
	one := target.Topology{Replicas: 1}
	for _, c := range []struct {
		name string
		src  Source
		topo target.Topology
		want string // "" valid; else the key and words the error holds
	}{
		{"default base", Source{Calibration: Calibration{Calibrate: true}}, one, ""},
		{"named base", Source{Profile: "fast", Calibration: Calibration{Calibrate: true, CalibrateBudget: time.Minute, CalibrateFile: "p.yaml"}}, one, ""},
		{"profile file", Source{ProfileFile: "x.yaml", Calibration: Calibration{Calibrate: true}}, one, "calibrate: fits a built-in profile"},
		{"overrides", Source{Profile: "fast", ProfileOverrides: map[string]any{"step_base_ms": 2}, Calibration: Calibration{Calibrate: true}}, one, "calibrate: the fit sets"},
		{"pd", Source{Calibration: Calibration{Calibrate: true}}, target.Topology{Prefill: 1, Decode: 1}, "calibrate: probes one engine"},
		{"negative budget", Source{Calibration: Calibration{Calibrate: true, CalibrateBudget: -time.Second}}, one, "calibrate_budget: must be a positive"},
		{"budget alone", Source{Profile: "fast", Calibration: Calibration{CalibrateBudget: time.Minute}}, one, "calibrate_budget: only with calibrate"},
		{"file alone", Source{Calibration: Calibration{CalibrateFile: "p.yaml"}}, one, "calibrate_file: only with calibrate"},
		{"unknown base", Source{Profile: "nosuch", Calibration: Calibration{Calibrate: true}}, one, "profile:"},
	} {
		err := c.src.Check(c.topo)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error holding %q", c.name, err, c.want)
		}
	}
	s := Source{Calibration: Calibration{Calibrate: true}}
	s.DefaultCalibration()
	if base, budget, _, ok := s.CalibrationRequest(); !ok || base != DefaultProfile || budget != DefaultCalibrateBudget || !s.Profiled() {
		t.Errorf("calibrate alone: base %q, budget %v, asked %v, profiled %v", base, budget, ok, s.Profiled())
	}
	sim := &Options{Source: Source{Profile: "fast", Calibration: Calibration{Calibrate: true}}}
	if err := sim.Validate(one); err == nil || !strings.Contains(err.Error(), "calibrate: only for targets of real servers") {
		t.Errorf("sim target with calibrate: %v", err)
	}
}
