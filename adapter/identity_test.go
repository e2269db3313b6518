package adapter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials"
)

// Issue 19 acceptance 3: changing one line of a trace file changes the
// workload identity (the row's workload_hash), though the spec, its path
// and its hash are unchanged.
func TestTraceContentIsInTheWorkloadIdentity(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	spec := filepath.Join(dir, "s.yaml")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(spec, "name: s\ntopology: {engine: {model: sim-llama-3-8b}}\nworkload: {kind: trace, path: t.jsonl}\n")
	identity := func() (string, string) {
		t.Helper()
		ts, err := trials.Load(spec, targetkinds.All())
		if err != nil {
			t.Fatal(err)
		}
		id, err := workloadIdentity(ts[0])
		if err != nil {
			t.Fatal(err)
		}
		return id, ts[0].SpecHash
	}
	write(trace, `{"timestamp": 0, "input_length": 64, "output_length": 8}
{"timestamp": 100, "input_length": 32, "output_length": 4}
`)
	a, specA := identity()
	write(trace, `{"timestamp": 0, "input_length": 64, "output_length": 8}
{"timestamp": 100, "input_length": 33, "output_length": 4}
`)
	b, specB := identity()
	if specA != specB {
		t.Fatalf("the spec hash changed (%s → %s): the test must change only the file", specA, specB)
	}
	if a == b {
		t.Errorf("workload identity %s unchanged after editing a line of the trace", a)
	}
	if again, _ := identity(); again != b {
		t.Errorf("workload identity not deterministic: %s then %s", b, again)
	}
}

// TestHardwareConfigCarriesTheHTTPPath: a virtual row's hardware identity
// holds the modelled HTTP path (its total and, when set, the part before
// the engine), so predictions with different paths never compete; a real
// row's holds the profile alone whatever the spec says.
func TestHardwareConfigCarriesTheHTTPPath(t *testing.T) {
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(clock string, overhead, inbound float64) map[string]any {
		t.Helper()
		var tr trials.Trial
		tr.Clock, tr.HTTPOverheadMs, tr.HTTPInboundMs = clock, overhead, inbound
		raw, err := hardwareConfig(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	if d := keys(trials.ClockVirtual, 1.5, 0.5); d["http_overhead_ms"] != 1.5 || d["http_inbound_ms"] != 0.5 {
		t.Errorf("virtual 1.5/0.5: http_overhead_ms %v, http_inbound_ms %v", d["http_overhead_ms"], d["http_inbound_ms"])
	}
	if d := keys(trials.ClockVirtual, 1.5, 0); d["http_overhead_ms"] != 1.5 || d["http_inbound_ms"] != nil {
		t.Errorf("virtual 1.5/0: http_overhead_ms %v, http_inbound_ms %v (want absent)", d["http_overhead_ms"], d["http_inbound_ms"])
	}
	if d := keys("", 1.5, 0.5); d["http_overhead_ms"] != nil || d["http_inbound_ms"] != nil {
		t.Errorf("real clock: the path is in the hardware identity: %v", d)
	}
}

// TestHardwareConfigCarriesTheEngineLag: a virtual row's hardware config
// holds engine_lag_ms and engine_wake_ms, both, when either is set (with or
// without an HTTP path), so predictions with different lags or wake-ups
// never compete, and a row with a lag alone is told from one written
// before engine_wake_ms existed (whose idle engines woke the lag late); a
// real row's holds neither.
func TestHardwareConfigCarriesTheEngineLag(t *testing.T) {
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	doc := func(clock string, overhead, lag, wake float64) map[string]any {
		t.Helper()
		var tr trials.Trial
		tr.Clock, tr.HTTPOverheadMs, tr.EngineLagMs, tr.EngineWakeMs = clock, overhead, lag, wake
		raw, err := hardwareConfig(p, tr)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := doc(trials.ClockVirtual, 0, 0.4, 0); d["engine_lag_ms"] != 0.4 || d["engine_wake_ms"] != 0.0 || d["http_overhead_ms"] != nil {
		t.Errorf("virtual, lag 0.4 alone: engine_lag_ms %v, engine_wake_ms %v, http_overhead_ms %v (want 0.4, 0, absent)",
			d["engine_lag_ms"], d["engine_wake_ms"], d["http_overhead_ms"])
	}
	if d := doc(trials.ClockVirtual, 0, 0, 0.1); d["engine_lag_ms"] != 0.0 || d["engine_wake_ms"] != 0.1 {
		t.Errorf("virtual, wake-up 0.1 alone: %v, want engine_lag_ms 0 and engine_wake_ms 0.1", d)
	}
	if d := doc(trials.ClockVirtual, 1.5, 0.4, 0.1); d["engine_lag_ms"] != 0.4 || d["engine_wake_ms"] != 0.1 || d["http_overhead_ms"] != 1.5 {
		t.Errorf("virtual, 1.5 ms path, lag 0.4, wake-up 0.1: %v", d)
	}
	if d := doc(trials.ClockVirtual, 1.5, 0, 0); d["engine_lag_ms"] != nil || d["engine_wake_ms"] != nil {
		t.Errorf("virtual without lateness: engine_lag_ms %v, engine_wake_ms %v, want both absent", d["engine_lag_ms"], d["engine_wake_ms"])
	}
	if d := doc("", 1.5, 0.4, 0.1); d["engine_lag_ms"] != nil || d["engine_wake_ms"] != nil {
		t.Errorf("real clock: the lateness is in the hardware identity: %v", d)
	}
}
