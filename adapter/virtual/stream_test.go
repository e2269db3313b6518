package virtual_test

import (
	"context"
	"math"
	"testing"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

// collocated is a cache_aware deployment of n engines.
func collocated(t *testing.T, n int) *virtual.Deployment {
	t.Helper()
	ws := workers(t, n, sim.RoleCollocated)
	cfg := routerconfig.Default()
	cfg.Policy = "cache_aware"
	for _, w := range ws {
		cfg.WorkerURLs = append(cfg.WorkerURLs, w.URL)
	}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStreamedSummaryMatchesKept: the same virtual run summarised from its
// kept records and streamed into the summary agrees: counts, peaks,
// percentiles and hashes exactly (every value fits the exact limit), means
// to the last bits (summed in finish order instead of index order); the
// streamed run keeps no records. With a tiny exact limit, percentiles stay
// within the histogram's bound and the summary says it is approximate.
func TestStreamedSummaryMatchesKept(t *testing.T) {
	dc := sharedPrefix(3)
	dc.Arrival = driver.Arrival{Kind: "poisson", RequestRate: 30}
	kept, err := driver.Simulate(context.Background(), dc, collocated(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := driver.SimulateWith(context.Background(), dc, collocated(t, 3), driver.SimOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := kept.Summary, streamed.Summary
	if len(streamed.Requests) != 0 || len(kept.Requests) != 40 {
		t.Fatalf("streamed run kept %d records, kept run %d (want 0, 40)", len(streamed.Requests), len(kept.Requests))
	}
	if a.Completed != b.Completed || a.SentHash != b.SentHash || a.StreamHash != b.StreamHash || a.P99TTFTMs != b.P99TTFTMs ||
		a.P50ITLMs != b.P50ITLMs || a.P90E2ELMs != b.P90E2ELMs || a.MaxOutputTokensPerS != b.MaxOutputTokensPerS ||
		a.MaxConcurrentRequests != b.MaxConcurrentRequests || a.Duration != b.Duration || b.PercentileRelError != 0 {
		t.Fatalf("streamed summary differs:\nkept     %+v\nstreamed %+v", a, b)
	}
	if math.Abs(a.MeanITLMs-b.MeanITLMs) > 1e-9*a.MeanITLMs {
		t.Fatalf("mean ITL %v kept, %v streamed", a.MeanITLMs, b.MeanITLMs)
	}
	approx, err := driver.SimulateWith(context.Background(), dc, collocated(t, 3), driver.SimOptions{Stream: true, ExactValues: 8})
	if err != nil {
		t.Fatal(err)
	}
	c := approx.Summary
	if c.PercentileRelError != metrics.PercentileRelError {
		t.Fatalf("percentile_rel_error %v past the exact limit, want %v", c.PercentileRelError, metrics.PercentileRelError)
	}
	// 40 values: the histogram takes a rank, numpy interpolates between two.
	for name, v := range map[string][2]float64{"p50 ttft": {a.P50TTFTMs, c.P50TTFTMs}, "p50 itl": {a.P50ITLMs, c.P50ITLMs}} {
		if math.Abs(v[0]-v[1]) > 0.05*v[0] {
			t.Errorf("%s: exact %v, histogram %v", name, v[0], v[1])
		}
	}
}
