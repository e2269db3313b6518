package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target"
)

// Acceptance 5: a pool driven past saturation is RouterPoolExhausted, never
// a worker failure.
func TestSaturatedPoolIsRouterPoolExhausted(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	out, err := r.Run(context.Background(), parseSpec(t, `
name: saturated
seed: 3
target: {kind: sim, profile: fast}
topology:
  replicas: 2
  engine: {model: sim-m}
router: {policy: least_loaded, max_concurrent_requests: 2, queue_size: 2}
workload:
  kind: random
  input_len: 32
  output_len: 32
  num_prompts: 60
  arrival: {kind: inf}
warmup: {requests: 0}
gate: {reference: none}
`)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != ledger.StatusFailed {
		t.Fatalf("status %s, want failed", out.Status)
	}
	f, ok := out.Failure.(failure.RouterPoolExhausted)
	if !ok {
		t.Fatalf("failure %T %v, want RouterPoolExhausted", out.Failure, out.Failure)
	}
	if f.ErrorType != "queue_full" || f.Count == 0 || f.PoolSize != 2 {
		t.Fatalf("failure %+v, want queue_full refusals on a pool of 2", f)
	}
	if out.Summary.Completed == 0 {
		t.Fatal("nothing completed: the pool was refused, not saturated")
	}
}

// A degraded deployment (4-bit AWQ) fails the quality gate against the
// full-precision reference, while fp8, a mild loss, stays under the default
// threshold but is still measurably different from the reference.
func TestQualityGateCatchesReducedPrecision(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	withQuant := func(q string) string {
		s := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "max_num_seqs: 32}", "max_num_seqs: 32, quantization: "+q+"}", 1)
		return strings.Replace(s, "prompts: 2}", "prompts: 8}", 1)
	}
	out, err := r.Run(context.Background(), parseSpec(t, withQuant("awq"))[0])
	if err != nil {
		t.Fatal(err)
	}
	if out.Gate == nil || out.Gate.Passed {
		t.Fatalf("awq: gate %+v, want a failed gate", out.Gate)
	}
	if _, ok := out.Failure.(failure.QualityGateFailed); !ok || out.Status != ledger.StatusFailed {
		t.Fatalf("awq: status %s failure %T, want failed with QualityGateFailed", out.Status, out.Failure)
	}
	fp8 := runOK(t, r, parseSpec(t, withQuant("fp8"))[0])
	if fp8.Gate == nil || fp8.Gate.KLMean <= 0 || fp8.Gate.KLMean >= out.Gate.KLMean {
		t.Fatalf("fp8 gate %+v: want 0 < KL < awq's %v", fp8.Gate, out.Gate.KLMean)
	}
	t.Logf("gate KL mean: fp8 %.5f (pass), awq %.5f (fail), threshold %.2f", fp8.Gate.KLMean, out.Gate.KLMean, out.Gate.KLThreshold)
}

// Ctrl-C mid-run: the runner stops the driver, tears down, records an
// aborted row and returns the context's error.
func TestInterruptRecordsAbortedRow(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.opts.Progress = func(p driver.Progress) {
		if p.Phase == "measured" && p.Done >= 5 {
			cancel()
		}
	}
	out, err := r.Run(ctx, parseSpec(t, fmt.Sprintf(tinySpec, "round_robin"))[0])
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if out.Status != ledger.StatusAborted || out.RowID == 0 {
		t.Fatalf("outcome %s row %d, want an aborted row", out.Status, out.RowID)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil || row.Status != ledger.StatusAborted {
		t.Fatalf("ledger row: %+v, %v", row.Status, err)
	}
}

// Workers answering 503 to everything exhaust the router's retries (breakers
// off, so attempts keep reaching them): the failure is RouterPoolExhausted
// with the router's own figures (retries, pool size) read from its error
// body, never a worker failure.
func TestPoolExhaustedCarriesTheRoutersFigures(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	r.hooks.provisioned = func(ctx context.Context, d *target.Deployment) {
		for _, w := range d.Workers {
			setFaults(ctx, t, w.URL, `{"error_rates": {"503": 1}}`)
		}
	}
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "router: {policy: round_robin}",
		"router: {policy: round_robin, circuit_breaker: {disable: true}, retry: {max_retries: 3, initial_backoff_ms: 1, max_backoff_ms: 2}}", 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.RouterPoolExhausted)
	if !ok {
		t.Fatalf("failure %T %v, want RouterPoolExhausted", out.Failure, out.Failure)
	}
	if f.ErrorType != "pool_exhausted" || f.Retries == 0 || f.PoolSize != 2 || f.Count != 24 {
		t.Fatalf("failure %+v: want pool_exhausted ×24 with the router's retries and a pool of 2", f)
	}
}

// A worker that crashes mid-run (and is not restarted) makes the trial
// WorkerCrashed, even though the router kept the requests flowing to the
// other worker.
func TestCrashedWorkerIsWorkerCrashed(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	var dep *target.Deployment
	r.hooks.provisioned = func(_ context.Context, d *target.Deployment) { dep = d }
	crashed := false
	r.opts.Progress = func(p driver.Progress) {
		if p.Phase == "measured" && p.Done >= p.Total/2 && !crashed {
			crashed = true
			// The crash may cut this very answer: its result says nothing.
			req, _ := http.NewRequest(http.MethodPost, dep.Workers[0].URL+"/admin/faults", strings.NewReader(`{"crash": true}`))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.WorkerCrashed)
	if !ok || f.Worker != dep.Workers[0].String() {
		t.Fatalf("failure %T %v, want WorkerCrashed of %s", out.Failure, out.Failure, dep.Workers[0])
	}
}

// A driver that sends later than its schedule fails the trial as
// HostOverloaded{schedule_delay_p99_ms} under the spec's default bound
// (100 ms at p99). The test makes the driver late itself: its clock reads
// 150 ms later at every look, so every send is at least that late, however
// loaded the machine is.
func TestLateDriverIsHostOverloaded(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t)
	r.opts.ScheduleDelayLimit = 0 // the default
	start := time.Now()
	var looks atomic.Int64
	r.hooks.clock = func() time.Time { return start.Add(time.Duration(looks.Add(1)) * 150 * time.Millisecond) }
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "replicas: 2", "replicas: 1", 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.HostOverloaded)
	if !ok || out.Status != ledger.StatusFailed {
		t.Fatalf("status %s, failure %T %v: want HostOverloaded", out.Status, out.Failure, out.Failure)
	}
	if f.Figure != failure.FigureScheduleDelayP99 || f.Bound != failure.DefaultScheduleDelayLimitMs || f.Value < 150 {
		t.Fatalf("failure %+v: want schedule_delay_p99_ms ≥ 150 against the default 100", f)
	}
	if out.Summary.Completed != 24 {
		t.Errorf("completed %d, want all 24: only the driver was late", out.Summary.Completed)
	}
}
