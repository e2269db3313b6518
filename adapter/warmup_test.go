package adapter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target"
)

// A warm-up that opens every circuit (both workers answer 500 to every
// warm-up request; the breaker opens after 10 failures and stays open for
// 60 s) fails the trial as WarmupCircuitsOpen, even though the workers are
// healthy again for the measured window: its refusals would otherwise be
// read as the pool's saturation. The row says what the warm-up sent and
// how it failed.
func TestWarmupThatOpensCircuitsFailsTheTrial(t *testing.T) {
	t.Parallel()
	r, led := newTestRunner(t)
	var workers []string
	r.hooks.provisioned = func(ctx context.Context, d *target.Deployment) {
		for _, w := range d.Workers {
			workers = append(workers, w.URL)
			setFaults(ctx, t, w.URL, `{"error_rates": {"500": 1}}`)
		}
	}
	r.hooks.driver = func(c *driver.Config) { c.ReadyCheckTimeout = -1 } // the ready check would wait out the 500s
	r.hooks.edge = func(ctx context.Context, edge string) {
		if edge == "begin" {
			for _, u := range workers {
				setFaults(ctx, t, u, `{}`)
			}
		}
	}
	spec := strings.Replace(fmt.Sprintf(tinySpec, "round_robin"), "warmup: {requests: 8}", "warmup: {requests: 40}", 1)
	spec = strings.Replace(spec, "gate: {reference: sim, prompts: 2}", "gate: {reference: none}", 1)
	out, err := r.Run(context.Background(), parseSpec(t, spec)[0])
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out.Failure.(failure.WarmupCircuitsOpen)
	if !ok || out.Status != ledger.StatusFailed {
		t.Fatalf("status %s, failure %T %v; want WarmupCircuitsOpen", out.Status, out.Failure, out.Failure)
	}
	if f.OpenCircuits != 2 || f.PoolSize != 2 || f.Sent != 40 || f.Failed != 40 {
		t.Errorf("failure %+v: want 2 of 2 circuits open, 40 of 40 warm-ups failed", f)
	}
	row, err := led.Get(context.Background(), out.RowID)
	if err != nil {
		t.Fatal(err)
	}
	var byType float64
	for _, n := range row.WarmupErrors {
		byType += n
	}
	if row.WarmupSent != 40 || row.WarmupFailed != 40 || byType != 40 {
		t.Errorf("row: warm-up sent %d, failed %d, by type %v; want 40, 40, 40 in all", row.WarmupSent, row.WarmupFailed, row.WarmupErrors)
	}
	t.Logf("%v", f)
}
