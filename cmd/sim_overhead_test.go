package cmd

import (
	"encoding/json"
	"math"
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
// and does not change how the engine spaces tokens by as much; the engines'
// timings split every request's TTFT.
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
	// The engines run in this process and report when each request reached
	// them and when they emitted its first token: every request's TTFT
	// splits into a path to the engine and a path back, both taking time.
	if o.Split != 30 || !(o.InboundP10Ms > 0) || o.InboundP10Ms > o.InboundP50Ms || o.InboundP50Ms > o.InboundP90Ms ||
		!(o.OutboundP10Ms > 0) || o.OutboundP10Ms > o.OutboundP50Ms || o.OutboundP50Ms > o.OutboundP90Ms {
		t.Errorf("split over %d requests: inbound p10/p50/p90 %.3f/%.3f/%.3f, outbound %.3f/%.3f/%.3f: want 30, positive, ordered",
			o.Split, o.InboundP10Ms, o.InboundP50Ms, o.InboundP90Ms, o.OutboundP10Ms, o.OutboundP50Ms, o.OutboundP90Ms)
	}
	if o.HTTPInboundMs > o.HTTPOverheadMs || o.HTTPOverheadMs != math.Round(100*max(0, o.TTFTP50Ms))/100 {
		t.Errorf("spec values: http_overhead_ms %v, http_inbound_ms %v (TTFT diff p50 %v): want the rounded median and inbound <= total",
			o.HTTPOverheadMs, o.HTTPInboundMs, o.TTFTP50Ms)
	}
	// The engines report their steps too: engine_lag_ms is the rounded
	// median step lag.
	if o.Steps == 0 || o.StepLagP10Ms < 0 || o.StepLagP10Ms > o.StepLagP50Ms || o.StepLagP50Ms > o.StepLagP90Ms ||
		o.EngineLagMs != math.Round(100*o.StepLagP50Ms)/100 {
		t.Errorf("step lag over %d steps: p10/p50/p90 %.3f/%.3f/%.3f, engine_lag_ms %v: want steps, ordered quantiles, the rounded median",
			o.Steps, o.StepLagP10Ms, o.StepLagP50Ms, o.StepLagP90Ms, o.EngineLagMs)
	}
	// At 40 requests/s over two engines most requests find theirs idle:
	// engine_wake_ms is the rounded median lateness of the steps their
	// engines planned on waking, which includes the planning delay.
	if o.Wakes == 0 || o.Wakes > o.Steps || o.WakeP10Ms < 0 || o.WakeP10Ms > o.WakeP50Ms || o.WakeP50Ms > o.WakeP90Ms ||
		o.EngineWakeMs != math.Round(100*o.WakeP50Ms)/100 || o.WakePlanP50Ms < 0 {
		t.Errorf("wake-ups over %d of %d steps: p10/p50/p90 %.3f/%.3f/%.3f, engine_wake_ms %v: want some, ordered quantiles, the rounded median",
			o.Wakes, o.Steps, o.WakeP10Ms, o.WakeP50Ms, o.WakeP90Ms, o.EngineWakeMs)
	}
	code, out, errs = run(t, "sim", "overhead", spec, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
	if code != ExitOK || !strings.Contains(out, "http_overhead_ms: ") || !strings.Contains(out, "http_inbound_ms: ") ||
		!strings.Contains(out, "engine_lag_ms: ") || !strings.Contains(out, "step lag  median") ||
		!strings.Contains(out, "engine_wake_ms: ") || !strings.Contains(out, "woken     median") ||
		!strings.Contains(out, "over 30 requests") || !strings.Contains(out, "inbound ") {
		t.Errorf("table output (exit %d):\n%s\nstderr:\n%s", code, out, errs)
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
