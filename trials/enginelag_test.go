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

// TestEngineWakeInTheVirtualHashOnly: engine_wake_ms changes a virtual
// trial's spec hash (apart from engine_lag_ms of the same value) and
// leaves a real one's as if it were absent; the flag gives the spec key's
// hash.
func TestEngineWakeInTheVirtualHashOnly(t *testing.T) {
	plain := mustParse(t, minimal)[0]
	if realT := mustParse(t, minimal+"engine_wake_ms: 0.1\n")[0]; realT.SpecHash != plain.SpecHash {
		t.Errorf("real clock: engine_wake_ms changed the spec hash")
	}
	virt := mustParse(t, minimal+"clock: virtual\n")[0]
	virtW := mustParse(t, minimal+"clock: virtual\nengine_wake_ms: 0.1\n")[0]
	virtL := mustParse(t, minimal+"clock: virtual\nengine_lag_ms: 0.1\n")[0]
	if virtW.SpecHash == virt.SpecHash || virtW.SpecHash == virtL.SpecHash || virtW.EngineWakeMs != 0.1 {
		t.Errorf("virtual clock: engine_wake_ms 0.1 kept the hash (%v), matched engine_lag_ms 0.1's (%v) or was not read (%v)",
			virtW.SpecHash == virt.SpecHash, virtW.SpecHash == virtL.SpecHash, virtW.EngineWakeMs)
	}
	ts := []Trial{virt}
	if err := SetEngineWake(ts, 0.1); err != nil {
		t.Fatal(err)
	}
	if ts[0].SpecHash != virtW.SpecHash {
		t.Errorf("--engine-wake-ms 0.1 gave hash %s, the spec key %s", ts[0].SpecHash, virtW.SpecHash)
	}
}

// TestEngineLatenessBounds: engine_lag_ms and engine_wake_ms outside
// [0, 100] ms (or NaN) are refused, naming the key and its line in a spec
// and the flag from --engine-lag-ms / --engine-wake-ms, which then changes
// nothing.
func TestEngineLatenessBounds(t *testing.T) {
	for _, k := range []struct {
		key, flag string
		set       func([]Trial, float64) error
		get       func(Trial) float64
	}{
		{"engine_lag_ms", "--engine-lag-ms", SetEngineLag, func(tr Trial) float64 { return tr.EngineLagMs }},
		{"engine_wake_ms", "--engine-wake-ms", SetEngineWake, func(tr Trial) float64 { return tr.EngineWakeMs }},
	} {
		for _, bad := range []string{": -0.1\n", ": 101\n", ": .nan\n"} {
			fields := specErr(t, minimal+k.key+bad)
			if len(fields) != 1 || fields[0].Path != k.key || fields[0].Line != 12 {
				t.Errorf("%q: errors %v, want one on %s at line 12", k.key+bad, fields, k.key)
			}
		}
		mustParse(t, minimal+k.key+": 100\n")
		ts := []Trial{mustParse(t, minimal+"clock: virtual\n"+k.key+": 0.3\n")[0]}
		for _, bad := range []float64{-1, 100.5} {
			if err := k.set(ts, bad); err == nil || !strings.Contains(err.Error(), k.flag) {
				t.Errorf("%s %v: %v, want an error naming the flag", k.flag, bad, err)
			}
		}
		if got := k.get(ts[0]); got != 0.3 {
			t.Errorf("a refused %s changed the trial: %s %v", k.flag, k.key, got)
		}
	}
}
