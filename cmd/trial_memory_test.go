package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/trials"
)

// A spec within every bound whose trial would still need far more memory
// than any machine has is refused before anything starts: exit 2, the
// estimate and the limit named, no ledger created.
func TestTrialRunRefusesSpecThatDoesNotFit(t *testing.T) {
	t.Parallel()
	spec := filepath.Join(t.TempDir(), "huge.yaml")
	writeFile(t, spec, `name: huge
topology:
  replicas: 2
  engine: {model: m, max_model_len: 2000000, num_gpu_blocks_override: 16000000}
workload: {kind: random, num_prompts: 1000000, input_len: 1000000, output_len: 16}
`)
	db := filepath.Join(t.TempDir(), "ledger.db")
	code, _, errs := run(t, "trial", "run", spec, "--ledger", db)
	if code != ExitUsage || !strings.Contains(errs, "trial huge needs an estimated") ||
		!strings.Contains(errs, "available (") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the ledger was created (%v): the refusal must come before anything starts", err)
	}
}

// With the memory source injected: the limit read from the files decides,
// and where nothing can be read the check says so and lets trials run.
func TestCheckTrialMemorySource(t *testing.T) {
	ts, err := trials.Load("../trials/examples/quickstart.yaml", targetkinds.All())
	if err != nil {
		t.Fatal(err)
	}
	small := fstest.MapFS{"proc/meminfo": {Data: []byte("MemAvailable:      1024 kB\n")}}
	var out strings.Builder
	err = checkTrialMemory(&out, ts, small)
	if err == nil || !strings.Contains(err.Error(), "1 MiB available (MemAvailable in /proc/meminfo)") {
		t.Errorf("1 MiB available: err %v", err)
	}
	large := fstest.MapFS{"proc/meminfo": {Data: []byte("MemAvailable:   64000000 kB\n")}}
	if err := checkTrialMemory(&out, ts, large); err != nil {
		t.Errorf("61 GiB available: %v", err)
	}
	if out.Len() > 0 {
		t.Errorf("unexpected warning %q", out.String())
	}
	if err := checkTrialMemory(&out, ts, fstest.MapFS{}); err != nil || !strings.Contains(out.String(), "not checked") {
		t.Errorf("no source: err %v, warning %q", err, out.String())
	}
}
