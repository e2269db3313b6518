package adapter

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/targetkinds"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// parseSpec parses a spec that must be valid.
func parseSpec(t testing.TB, spec string) []trials.Trial {
	t.Helper()
	ts, err := trials.Parse([]byte(spec), targetkinds.All())
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return ts
}

// noOverload is the schedule-delay limit of tests about other verdicts: a
// driver made late by a loaded machine must not decide them. The tests of
// HostOverloaded make the driver late themselves (through its clock) or
// inject the engines' lag.
const noOverload = time.Duration(math.MaxInt64)

// noEngineLagBound is the engine-lag bound of tests about other verdicts,
// for the same reason.
var noEngineLagBound = math.Inf(1)

// newTestRunner returns a runner recording into a fresh ledger.
func newTestRunner(t *testing.T) (*Runner, *ledger.Ledger) {
	t.Helper()
	led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	r, err := New(Options{Ledger: led, WorkDir: t.TempDir(), ScheduleDelayLimit: noOverload, EngineLagRatioLimit: noEngineLagBound})
	if err != nil {
		t.Fatal(err)
	}
	return r, led
}

// runOK runs a trial that must end ok.
func runOK(t *testing.T, r *Runner, tr trials.Trial) Outcome {
	t.Helper()
	out, err := r.Run(context.Background(), tr)
	if err != nil {
		t.Fatalf("run %s: %v", tr.Name, err)
	}
	if out.Status != ledger.StatusOK {
		t.Fatalf("trial %s: status %s, failure %v%s", tr.Name, out.Status, out.Failure, failedRequests(r, out))
	}
	return out
}

// allZero fails the test unless every load is 0.
func requireZeroLoads(t *testing.T, loads map[string]float64) {
	t.Helper()
	if len(loads) == 0 {
		t.Fatal("no router loads were read")
	}
	for w, v := range loads {
		if v != 0 {
			t.Errorf("router load of %s is %v after the trial, want 0", w, v)
		}
	}
}

// tinySpec is a small two-replica trial on fast engines.
const tinySpec = `
name: tiny
seed: 7
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-m, max_num_seqs: 32}
router: {policy: %s}
workload:
  kind: random
  input_len: 64
  output_len: 8
  num_prompts: 24
  arrival: {kind: poisson, request_rate: 200}
warmup: {requests: 8}
gate: {reference: sim, prompts: 2}
`

// failedRequests describes the failed requests of a recorded trial, so a
// failing test says what the server answered.
func failedRequests(r *Runner, out Outcome) string {
	led, ok := r.opts.Ledger.(*ledger.Ledger)
	if !ok || out.RowID == 0 {
		return ""
	}
	reqs, err := led.Requests(context.Background(), out.RowID)
	if err != nil {
		return "; reading requests: " + err.Error()
	}
	var b strings.Builder
	for _, q := range reqs {
		if q.Status != ledger.RequestOK && b.Len() < 2000 {
			fmt.Fprintf(&b, "\n  request %d: %s %s: %s", q.Index, q.Status, q.ErrorType, q.Error)
		}
	}
	return b.String()
}

// hitRate is the trial's measured-window prefix-cache hit rate, which the
// sim engines always export.
func hitRate(t *testing.T, out Outcome) float64 {
	t.Helper()
	if out.Window.PrefixCacheHitRate == nil {
		t.Fatalf("trial %s: no prefix-cache hit rate", out.Name)
	}
	return *out.Window.PrefixCacheHitRate
}

// lagRatio is the trial's engine lag ratio, 0 when not measured.
func lagRatio(out Outcome) float64 {
	if out.Window.EngineLagRatio == nil {
		return 0
	}
	return *out.Window.EngineLagRatio
}
