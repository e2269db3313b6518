package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// Issue 33 item 1 on kubernetes: a trial with calibrate: true (local
// runner) probes its first pod before the measured run, writes the
// profile file it asks for and is predicted by it — or, where the host ran
// the probe late, is recorded unpredicted with the file marked unfit.
func TestKubernetesTrialCalibrates(t *testing.T) {
	t.Parallel()
	kubelet := env.Kubelet(t)
	r, led := runner(t, nil)
	file := filepath.Join(t.TempDir(), "cal.yaml")
	tgt := kubernetesTarget(t, "profile: fast", "calibrate: true", "calibrate_budget: 3s", "calibrate_file: "+file)
	out, err := r.Run(context.Background(), parse(t, fmt.Sprintf(trialSpec, tgt, 24, 200)))
	if err != nil {
		t.Fatal(err)
	}
	c := out.Calibration
	if out.Status != ledger.StatusOK || c == nil || c.Err != "" || c.File != file {
		t.Fatalf("status %s (%v), calibration %+v; want ok and a profile file at %s", out.Status, out.Failure, c, file)
	}
	if c.Unfit != "" {
		if out.ReplayRow != 0 {
			t.Errorf("an unfit calibration predicted row %d", out.ReplayRow)
		}
		t.Logf("unfit on this host: %s", c.Unfit)
	} else {
		v, err := led.Get(context.Background(), out.ReplayRow)
		if err != nil {
			t.Fatalf("prediction row %d: %v", out.ReplayRow, err)
		}
		var hc struct {
			Hash string `json:"content_hash"`
		}
		if err := json.Unmarshal(v.HardwareConfig, &hc); err != nil || hc.Hash != c.ContentHash {
			t.Errorf("prediction row: config %s, want content hash %s", v.HardwareConfig, c.ContentHash)
		}
	}
	requireTrialsGone(t, kubelet)
}
