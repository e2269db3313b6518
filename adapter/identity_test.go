package adapter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
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
