package adapter

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/target"
)

// chaosScale is the length of the long trial, its concurrency and the
// client's patience: tens of thousands of streaming requests, 144 at a time
// (48 per engine, within max_num_seqs, so the trial takes about five
// seconds rather than ten at 48), whose clients give up after 300 ms (a
// healthy request takes a few). The race detector makes every request
// several times dearer: the full trial would take minutes of CPU and
// healthy requests could outlast 300 ms. Under it a twentieth of the trial,
// 48 at a time, which still crosses the restart, the injected errors and
// the client cancellations, runs with clients that wait a second; the full
// length runs without the detector. Either way, a request routed to the
// stalled worker is cancelled by its client, whatever the machine's speed.
func chaosScale() (requests, concurrency int, timeout time.Duration) {
	if raceDetector {
		return 1000, 48, time.Second
	}
	return 20000, 144, 300 * time.Millisecond
}

// Acceptance 7: a long streaming trial with injected worker errors, client
// cancellations mid-stream and a worker restart ends with every router load
// at 0.
func TestLongChaoticTrialEndsWithZeroLoads(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("long trial")
	}
	r, led := newTestRunner(t)
	var (
		dep        *target.Deployment
		restart    sync.Once
		restarts   sync.WaitGroup
		restartErr error
	)
	ctx := context.Background()
	r.hooks.provisioned = func(_ context.Context, d *target.Deployment) { dep = d }
	// The faults start with the measured window, after the ready check: a
	// deployment that answers the ready check with an error is rightly
	// refused (TargetNotReady), which with injected 400s on two workers of
	// three happened about once in thirty runs and sent no request at all.
	r.hooks.edge = func(ctx context.Context, edge string) {
		if edge != "begin" {
			return
		}
		for _, w := range dep.Workers[:2] {
			setFaults(ctx, t, w.URL, `{"error_rates": {"500": 0.02, "503": 0.02, "400": 0.05}}`)
		}
		// The third worker stalls every stream after 2 tokens until the
		// client leaves: each request routed there is cancelled by its
		// client mid-stream, whatever the machine's speed.
		setFaults(ctx, t, dep.Workers[2].URL, `{"error_rates": {"500": 0.02}, "stall": true, "stall_after_tokens": 2}`)
	}
	requests, concurrency, timeout := chaosScale()
	r.hooks.driver = func(c *driver.Config) { c.Timeout = timeout }
	r.opts.Progress = func(p driver.Progress) {
		if p.Phase == "measured" && p.Done >= p.Total/2 {
			restart.Do(func() {
				restarts.Go(func() { restartErr = dep.Restart(ctx, 1) })
			})
		}
	}
	spec := fmt.Sprintf(`
name: chaos
seed: 5
target: {kind: sim, profile: fast}
topology:
  replicas: 3
  engine: {model: sim-m, max_num_seqs: 64}
router:
  policy: power_of_two
  retry: {max_retries: 3, initial_backoff_ms: 1, max_backoff_ms: 5}
  health_check: {interval_secs: 0.2, timeout_secs: 0.1}
workload:
  kind: random
  input_len: 24
  output_len: 12
  num_prompts: %d
  arrival: {kind: inf, max_concurrency: %d}
warmup: {requests: 0}
gate: {reference: none}
`, requests, concurrency)
	out, err := r.Run(ctx, parseSpec(t, spec)[0])
	restarts.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if restartErr != nil {
		t.Fatalf("restarting a worker mid-run: %v", restartErr)
	}
	s := out.Summary
	t.Logf("%d completed, %d failed, errors by type %v, by status %v", s.Completed, s.Failed, s.ErrorsByType, s.ErrorsByStatus)
	if s.Completed+s.Failed != requests {
		t.Fatalf("%d completed + %d failed, want %d requests accounted for (status %s, failure %v)", s.Completed, s.Failed, requests, out.Status, out.Failure)
	}
	if s.ErrorsByType["timeout"] == 0 {
		t.Error("no request was cancelled by its client: the stalled worker got no traffic")
	}
	if s.ErrorsByStatus["400"] == 0 {
		t.Error("no injected error reached the client: the chaos did not happen")
	}
	row, err := led.Get(ctx, out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	requireZeroLoads(t, row.FinalLoads)
	if _, leak := out.Failure.(failure.RouterPolicyInvariant); leak {
		t.Fatalf("load invariant broken: %v", out.Failure)
	}
}

// setFaults replaces a simulated worker's fault injection.
func setFaults(ctx context.Context, t *testing.T, base, faults string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/admin/faults", bytes.NewReader([]byte(faults)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setting faults on %s: %d", base, resp.StatusCode)
	}
}
