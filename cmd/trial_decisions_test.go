package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter"
)

const decisionsSpec = `
name: decide
seed: %d
target: {kind: sim, profile: h100-llama3-8b}
topology: {replicas: 3, engine: {model: sim-llama-3-8b}}
router: {policy: power_of_two}
workload: {kind: random, input_len: 32, output_len: 4, num_prompts: 40, arrival: {kind: poisson, request_rate: 50}}
warmup: {requests: 2}
`

// TestRecordDecisionsSameSeedSameBytes: two virtual runs with one seed
// write byte-identical decision records, one line per request the router
// saw; another seed changes them; a real-clock trial is refused naming the
// flag and leaves no file.
func TestRecordDecisionsSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := func(seed int, name string) []byte {
		spec := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(spec, []byte(strings.Replace(decisionsSpec, "%d", string(rune('0'+seed)), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+".jsonl")
		if code, _, errs := run(t, "trial", "run", spec, "--clock", "virtual", "--ledger", filepath.Join(dir, "l.db"), "--record-decisions", out); code != ExitOK {
			t.Fatalf("seed %d: exit %d: %s", seed, code, errs)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := record(1, "a"), record(1, "b"), record(2, "c")
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with seed 1 wrote different decision records")
	}
	if bytes.Equal(a, c) {
		t.Fatal("seeds 1 and 2 wrote the same decision records")
	}
	workers := map[string]int{}
	n, measured := 0, 0
	for sc := bufio.NewScanner(bytes.NewReader(a)); sc.Scan(); n++ {
		var d adapter.DecisionLine
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %d: %v: %s", n+1, err, sc.Text())
		}
		if d.Trial != "decide" || d.Worker.URL == "" || d.PD {
			t.Fatalf("line %d: %+v", n+1, d)
		}
		workers[d.Worker.URL]++
		if !d.Warmup {
			measured++
			if d.Result == nil || !d.Result.Success || !(d.Result.TTFTMs > 0) || d.Result.OutputTokens != 4 {
				t.Fatalf("line %d: measured request without its outcome: %+v", n+1, d.Result)
			}
		} else if d.Result != nil {
			t.Fatalf("line %d: a warm-up request with an outcome", n+1)
		}
	}
	if measured != 40 || n != 42 || len(workers) != 3 {
		t.Errorf("%d decisions (%d measured) over %d workers, want 40 measured and 2 warm-up over 3", n, measured, len(workers))
	}
	spec := filepath.Join(dir, "a.yaml")
	out := filepath.Join(dir, "real.jsonl")
	code, _, errs := run(t, "trial", "run", spec, "--ledger", filepath.Join(dir, "l.db"), "--record-decisions", out)
	if code != ExitUsage || !strings.Contains(errs, "--record-decisions") || !strings.Contains(errs, "--clock virtual") {
		t.Errorf("real clock: exit %d: %s; want a usage error naming --record-decisions and --clock virtual", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused run left %s (%v)", out, err)
	}
}
