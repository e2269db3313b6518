package kubernetes

import (
	"strings"
	"testing"
)

// A kubernetes target calibrates (and names a profile) as the static one
// does, with the local runner only: the probe runs in autoinfer's own
// process, which must reach the pods; the budget defaults.
func TestCalibrateNeedsTheLocalRunner(t *testing.T) {
	t.Parallel()
	o := validOptions()
	o.Calibrate = true
	o.Default()
	if err := o.Validate(topo); err != nil || !o.Profiled() || o.CalibrateBudget == 0 {
		t.Fatalf("calibrate, local runner: %v (profiled %v, budget %v)", err, o.Profiled(), o.CalibrateBudget)
	}
	o.Runner, o.RunnerImage = RunnerInCluster, "ghcr.io/autoinfer/autoinfer:v1"
	if err := o.Validate(topo); err == nil || !strings.Contains(err.Error(), "calibrate: only with runner local") {
		t.Errorf("calibrate with the in-cluster runner: %v", err)
	}
	if c, ok := o.WithProfileFile("/p.yaml").(*Options); !ok || c.ProfileFile != "/p.yaml" || c.Calibrate || c.Image != o.Image {
		t.Errorf("WithProfileFile: %+v", c)
	}
}
