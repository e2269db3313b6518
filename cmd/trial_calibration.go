package cmd

import (
	"fmt"

	"github.com/autoinfer/autoinfer/adapter"
	"github.com/autoinfer/autoinfer/target/sim/calibrate"
)

// calibrationNote says what a trial's calibration (calibrate: true) did:
// the profile file its prediction ran and that profile's content hash, or
// why the trial has no prediction ("" when it calibrated nothing).
func calibrationNote(c *adapter.Calibration) string {
	switch {
	case c == nil:
		return ""
	case c.Err != "":
		return "calibration failed, no prediction: " + c.Err
	case c.Unfit != "":
		return fmt.Sprintf("calibration unfit, no prediction (%s): %s", c.File, c.Unfit)
	}
	return fmt.Sprintf("calibrated profile %s (%s), held-out TTFT p50 %.1f %%, TPOT p50 %.1f %%",
		c.File, c.ContentHash, 100*c.HeldOut[calibrate.MetricTTFTP50], 100*c.HeldOut[calibrate.MetricTPOTP50])
}
