package calibrate

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// A probe that yields no usable fit is an unfit calibration with the
// reason, never an error nor a replay of a profile that cannot run: a
// budget no group fits in; every group run late and too few steps to
// separate the coefficients (concurrency 1 only: decoding sequences never
// vary); the same design on time. Each file says unfit and is refused.
func TestCalibrationWithoutAUsableFitIsUnfit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		late   float64
		cfg    Config
		reason []string
	}{
		{"budget spent in the first group", 0, Config{Budget: time.Millisecond}, []string{"no probe group completed within the budget 1ms"}},
		{"every group late, design singular", 0.2, Config{Budget: time.Minute, Rounds: 2, MaxConcurrency: 1},
			[]string{"host overloaded: 4 of 4 probe groups ran late", "do not separate the coefficients"}},
		{"design singular", 0, Config{Budget: time.Minute, Rounds: 2, MaxConcurrency: 1}, []string{"do not separate the coefficients"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				n := simtest.NewNetwork()
				w := simtest.StartPipe(t, n, sim.Options{Profile: truth()})
				cfg := c.cfg
				cfg.HTTP, cfg.URL, cfg.Base, cfg.Seed = n.Client(), w.URL, "fast", 7
				if c.late > 0 {
					cfg.URL = lateServer(t, n, w.URL, c.late)
				}
				res, err := Calibrate(t.Context(), cfg)
				if err != nil {
					t.Fatalf("calibration failed instead of marked unfit: %v", err)
				}
				for _, want := range c.reason {
					if !strings.Contains(res.Unfit, want) {
						t.Errorf("unfit %q, want it to say %q", res.Unfit, want)
					}
				}
				if len(res.HeldOut) != 0 || len(res.Fit.Coefficients) != 0 {
					t.Errorf("held-out %v and coefficients %v from a probe with no fit", res.HeldOut, res.Fit.Coefficients)
				}
				if _, err := sim.ParseProfileFile(res.File); err == nil || !strings.Contains(err.Error(), "unfit") {
					t.Errorf("the profile file of a probe with no fit parsed: %v\n%s", err, res.File)
				}
				t.Logf("%d groups: %s", len(res.Observed), res.Unfit)
			})
		})
	}
}

// A calibrated base against a server whose steps do not grow with the
// GPU's work (per-request timers: every token 4 ms after the last,
// whatever else runs) fits gpu_time_scale 0, which no calibrated profile
// may have: the calibration is unfit, saying so and why the server does
// not fit the step model, and no replay runs on that profile.
func TestCalibrationFittingAProfileThatCannotRunIsUnfit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := simtest.NewNetwork()
		res, err := Calibrate(t.Context(), Config{HTTP: n.Client(), URL: startNoBatch(t, n), Base: "h100-llama3-8b",
			Seed: 3, Budget: time.Minute, Rounds: 1})
		if err != nil {
			t.Fatalf("calibration failed instead of marked unfit: %v", err)
		}
		for _, want := range []string{"the fitted profile cannot run", "gpu_time_scale", "does not batch prefills"} {
			if !strings.Contains(res.Unfit, want) {
				t.Errorf("unfit %q, want it to say %q", res.Unfit, want)
			}
		}
		if len(res.HeldOut) != 0 {
			t.Errorf("held-out errors %v from a profile that cannot run", res.HeldOut)
		}
		if _, err := sim.ParseProfileFile(res.File); err == nil || !strings.Contains(err.Error(), "unfit") {
			t.Errorf("the profile file of a fit that cannot run parsed: %v\n%s", err, res.File)
		}
		t.Logf("fit %+v: %s", res.Fit.Coefficients, res.Unfit)
	})
}
