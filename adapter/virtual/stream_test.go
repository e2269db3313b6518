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
	return deployed(t, n, "cache_aware")
}

// deployed is a deployment of n engines behind policy.
func deployed(t *testing.T, n int, policy string) *virtual.Deployment {
	t.Helper()
	ws := workers(t, n, sim.RoleCollocated)
	cfg := routerconfig.Default()
	cfg.Policy = policy
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

// TestLazyStreamMatchesGenerated: a streamed run of a random workload,
// whose requests are generated as they fall due, sends what Generate
// builds (equal stream and sent hashes) and summarises as the kept run
// does; also when max_seconds stops it with requests unsent and in flight.
func TestLazyStreamMatchesGenerated(t *testing.T) {
	for _, maxSeconds := range []float64{0, 1.5} {
		dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 5, NumPrompts: 120, WarmupRequests: 3,
			Workload: driver.Workload{Kind: "random", InputLen: 64, OutputLen: 8, RangeRatio: 0.5, MaxSeconds: maxSeconds},
			Arrival:  driver.Arrival{Kind: "poisson", RequestRate: 40}}
		a := keptMatchesLazy(t, dc, func() *virtual.Deployment { return collocated(t, 2) })
		if maxSeconds > 0 && (a.NotSent == 0 || a.Completed == 0) {
			t.Fatalf("max_seconds %v should stop the run midway: %d completed, %d not sent", maxSeconds, a.Completed, a.NotSent)
		}
	}
}

// keptMatchesLazy runs dc on a fresh deployment twice, keeping its records
// and streamed (its stream lazy), and fails unless both send what Generate
// builds (stream hash) and the same bytes (sent hash) and summarise alike;
// it returns the kept run's summary.
func keptMatchesLazy(t *testing.T, dc driver.Config, deploy func() *virtual.Deployment) metrics.Summary {
	t.Helper()
	kept, err := driver.Simulate(context.Background(), dc, deploy())
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := driver.SimulateWith(context.Background(), dc, deploy(), driver.SimOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := driver.Generate(dc)
	if err != nil {
		t.Fatal(err)
	}
	a, b := kept.Summary, lazy.Summary
	if b.StreamHash != st.Hash() || a.StreamHash != st.Hash() || a.SentHash != b.SentHash {
		t.Fatalf("stream hash lazy %s, kept %s, generated %s; sent hash kept %s, lazy %s",
			b.StreamHash, a.StreamHash, st.Hash(), a.SentHash, b.SentHash)
	}
	if a.Completed != b.Completed || a.NotSent != b.NotSent || a.Incomplete != b.Incomplete || a.Failed != b.Failed ||
		a.P99TTFTMs != b.P99TTFTMs || a.P50TPOTMs != b.P50TPOTMs || a.MaxConcurrentRequests != b.MaxConcurrentRequests ||
		a.Duration != b.Duration || a.TotalInputTokens != b.TotalInputTokens || a.NumPrompts != b.NumPrompts {
		t.Fatalf("lazy streamed summary differs:\nkept %+v\nlazy %+v", a, b)
	}
	return a
}
