package trials

import (
	"strings"
	"testing"
)

// TestEngineLagInTheVirtualHashOnly: engine_lag_ms changes a virtual
// trial's spec hash and leaves a real one's as if it were absent; the flag
// gives the spec key's hash.
func TestEngineLagInTheVirtualHashOnly(t *testing.T) {
	plain := mustParse(t, minimal)[0]
	if realT := mustParse(t, minimal+"engine_lag_ms: 0.4\n")[0]; realT.SpecHash != plain.SpecHash {
		t.Errorf("real clock: engine_lag_ms changed the spec hash")
	}
	virt := mustParse(t, minimal+"clock: virtual\n")[0]
	virtL := mustParse(t, minimal+"clock: virtual\nengine_lag_ms: 0.4\n")[0]
	if virtL.SpecHash == virt.SpecHash || virtL.EngineLagMs != 0.4 {
		t.Errorf("virtual clock: engine_lag_ms 0.4 kept the hash (%v) or was not read (%v)", virtL.SpecHash == virt.SpecHash, virtL.EngineLagMs)
	}
	ts := []Trial{virt}
	if err := SetEngineLag(ts, 0.4); err != nil {
		t.Fatal(err)
	}
	if ts[0].SpecHash != virtL.SpecHash {
		t.Errorf("--engine-lag-ms 0.4 gave hash %s, the spec key %s", ts[0].SpecHash, virtL.SpecHash)
	}
}

// TestEngineLagBounds: engine_lag_ms outside [0, 100] ms (or NaN) is
// refused, naming the key and its line in a spec and the flag from
// --engine-lag-ms, which then changes nothing.
func TestEngineLagBounds(t *testing.T) {
	for _, bad := range []string{"engine_lag_ms: -0.1\n", "engine_lag_ms: 101\n", "engine_lag_ms: .nan\n"} {
		fields := specErr(t, minimal+bad)
		if len(fields) != 1 || fields[0].Path != "engine_lag_ms" || fields[0].Line != 12 {
			t.Errorf("%q: errors %v, want one on engine_lag_ms at line 12", bad, fields)
		}
	}
	mustParse(t, minimal+"engine_lag_ms: 100\n")
	ts := []Trial{mustParse(t, minimal+"clock: virtual\nengine_lag_ms: 0.3\n")[0]}
	for _, bad := range []float64{-1, 100.5} {
		if err := SetEngineLag(ts, bad); err == nil || !strings.Contains(err.Error(), "--engine-lag-ms") {
			t.Errorf("--engine-lag-ms %v: %v, want an error naming the flag", bad, err)
		}
	}
	if ts[0].EngineLagMs != 0.3 {
		t.Errorf("a refused flag changed the trial: engine_lag_ms %v", ts[0].EngineLagMs)
	}
}
