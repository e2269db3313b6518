package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/adapter"
)

const overheadSpec = `name: oh
seed: 4
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-llama-3-8b}
router: {policy: round_robin}
workload:
  kind: random
  input_len: 64
  output_len: 8
  num_prompts: 30
  arrival: {kind: poisson, request_rate: 40}
warmup: {requests: 2}
gate: {reference: sim, prompts: 2}
`

// TestSimOverheadPairsEveryRequest runs `sim overhead` on a small spec: the
// real-time and the virtual run are paired request by request (all 30), the
// real HTTP path costs time (TTFT and E2E later than on the virtual clock)
// and does not change how the engine spaces tokens by as much.
func TestSimOverheadPairsEveryRequest(t *testing.T) {
	t.Parallel()
	spec := filepath.Join(t.TempDir(), "oh.yaml")
	if err := os.WriteFile(spec, []byte(overheadSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "sim", "overhead", spec, "-o", "json", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var o adapter.Overhead
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if o.Trial != "oh" || o.Pairs != 30 || o.RealRow == 0 || o.Virtual == 0 || o.RealRow == o.Virtual {
		t.Fatalf("overhead %+v: want trial oh, 30 pairs, two rows", o)
	}
	if !(o.TTFTP50Ms > 0) || !(o.E2EP50Ms > 0) || o.TTFTP10Ms > o.TTFTP50Ms || o.TTFTP50Ms > o.TTFTP90Ms {
		t.Errorf("TTFT diff p10/p50/p90 %.3f/%.3f/%.3f, E2E p50 %.3f: want the real path later, quantiles ordered",
			o.TTFTP10Ms, o.TTFTP50Ms, o.TTFTP90Ms, o.E2EP50Ms)
	}
	code, out, _ = run(t, "sim", "overhead", spec, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK || !strings.Contains(out, "http_overhead_ms: ") || !strings.Contains(out, "over 30 requests") {
		t.Errorf("table output (exit %d):\n%s", code, out)
	}
}

func TestSimOverheadRefusesAnUnknownTrial(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "oh.yaml")
	if err := os.WriteFile(spec, []byte(overheadSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "sim", "overhead", spec, "--trial", "nosuch")
	if code != ExitUsage || !strings.Contains(errs, `--trial "nosuch"`) || !strings.Contains(errs, `"oh"`) {
		t.Errorf("exit %d, stderr %q: want usage error naming the trial and the spec's trials", code, errs)
	}
}
