package virtual_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

func workers(t *testing.T, n int, role sim.Role) []virtual.Worker {
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]virtual.Worker, n)
	for i := range out {
		out[i] = virtual.Worker{URL: "http://virtual-" + string(role) + "-" + string(rune('a'+i)), Options: sim.Options{Role: role, Profile: prof, Engine: engine.Config{Model: "sim-model"}}}
	}
	return out
}

func sharedPrefix(seed int64) driver.Config {
	return driver.Config{BaseURL: "http://virtual:1", Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: seed, WarmupRequests: 4,
		Workload: driver.Workload{Kind: "shared_prefix", NumGroups: 4, PromptsPerGroup: 10, SystemPromptLen: 256, QuestionLen: 16, OutputLen: 16},
		Arrival:  driver.Arrival{RequestRate: 20}}
}

// TestCollocatedCacheAware runs 40 shared-prefix requests through a
// cache_aware router over three engines in virtual time: every request
// completes with its 16 tokens, the stream hash equals the one an HTTP run
// sends, and most requests after the first of their group hit the cache.
func TestCollocatedCacheAware(t *testing.T) {
	ws := workers(t, 3, sim.RoleCollocated)
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
	dc := sharedPrefix(7)
	res, err := driver.Simulate(context.Background(), dc, d)
	if err != nil {
		t.Fatal(err)
	}
	st, err := driver.Generate(dc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Completed != 40 || s.TotalOutputTokens != 40*16 || s.StreamHash != st.Hash() {
		t.Fatalf("completed %d, output tokens %d, stream hash %s (want 40, 640, %s)", s.Completed, s.TotalOutputTokens, s.StreamHash, st.Hash())
	}
	hits := 0
	for _, r := range res.Requests {
		if *r.CachedTokens >= 240 {
			hits++
		}
	}
	if hits < 30 {
		t.Errorf("%d of 40 requests hit the prefix cache, want >= 30 under cache_aware", hits)
	}
	if s.MedianTTFTMs <= 0 || s.MedianTPOTMs <= 0 {
		t.Errorf("TTFT p50 %v, TPOT p50 %v: want > 0", s.MedianTTFTMs, s.MedianTPOTMs)
	}
	t.Logf("ttft p50 %.2f ms tpot p50 %.2f ms throughput %.1f req/s", s.MedianTTFTMs, s.MedianTPOTMs, s.RequestThroughput)
}

// records runs a PD deployment (two prefill, two decode workers,
// cache_aware decode) on the virtual clock and returns its request records
// as JSON lines.
func records(t *testing.T, seed int64) []byte {
	t.Helper()
	ws := append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
	cfg := routerconfig.Default()
	cfg.PDDisaggregation, cfg.KVConnector = true, "nixl"
	cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", "cache_aware"
	cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, uint64(seed))
	if err != nil {
		t.Fatal(err)
	}
	dc := sharedPrefix(seed)
	dc.Arrival = driver.Arrival{Kind: "poisson", RequestRate: 40}
	res, err := driver.Simulate(context.Background(), dc, d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != 40 {
		t.Fatalf("seed %d: %d of 40 completed", seed, res.Summary.Completed)
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSONL(&buf, res.Requests); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cacheAwareRun runs seed 5's shared-prefix traffic through cache_aware
// over two collocated engines on the virtual clock, after setup adjusts
// the deployment and the driver's config, and returns the request records.
func cacheAwareRun(t *testing.T, setup func(*virtual.Deployment, *driver.Config) error) []metrics.RequestRecord {
	t.Helper()
	ws := workers(t, 2, sim.RoleCollocated)
	cfg := routerconfig.Default()
	cfg.Policy = "cache_aware"
	cfg.WorkerURLs = []string{ws[0].URL, ws[1].URL}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		t.Fatal(err)
	}
	dc := sharedPrefix(5)
	if err := setup(d, &dc); err != nil {
		t.Fatal(err)
	}
	res, err := driver.Simulate(context.Background(), dc, d)
	if err != nil {
		t.Fatal(err)
	}
	return res.Requests
}

// cacheAwareRecords is cacheAwareRun with Poisson arrivals at 40/s, its
// records as JSON lines.
func cacheAwareRecords(t *testing.T, setup func(*virtual.Deployment, *driver.Config) error) []byte {
	t.Helper()
	recs := cacheAwareRun(t, func(d *virtual.Deployment, dc *driver.Config) error {
		dc.Arrival = driver.Arrival{Kind: "poisson", RequestRate: 40}
		return setup(d, dc)
	})
	var buf bytes.Buffer
	if err := metrics.WriteJSONL(&buf, recs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSameSeedSameRecords is issue 20's acceptance 2: two virtual runs
// with the same seed give byte-identical request records (every time,
// token count, cache hit); another seed changes them.
func TestSameSeedSameRecords(t *testing.T) {
	a, b, c := records(t, 3), records(t, 3), records(t, 4)
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 3 twice gave different records:\n%s\n---\n%s", a, b)
	}
	if bytes.Equal(a, c) {
		t.Fatal("seeds 3 and 4 gave identical records")
	}
}

// TestHTTPOverheadDelaysDeliveryOnly runs one deployment twice, without and
// with a 1.5 ms HTTP overhead: every request's TTFT and E2E grow by exactly
// 1.5 ms, its gaps between tokens (ITL, TPOT) and what the engines did
// (tokens, cache hits) stay the same.
func TestHTTPOverheadDelaysDeliveryOnly(t *testing.T) {
	run := func(overhead time.Duration) []metrics.RequestRecord {
		return cacheAwareRun(t, func(_ *virtual.Deployment, dc *driver.Config) error {
			dc.HTTPOverhead = overhead
			return nil
		})
	}
	base, late := run(0), run(1500*time.Microsecond)
	if len(base) != 40 || len(late) != 40 {
		t.Fatalf("%d and %d records, want 40 each", len(base), len(late))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, a := range base {
		b := late[i]
		if !near(b.TTFTMs-a.TTFTMs, 1.5) || !near(b.E2ELMs-a.E2ELMs, 1.5) {
			t.Errorf("request %d: TTFT %.4f → %.4f, E2E %.4f → %.4f: want both +1.5 ms", i, a.TTFTMs, b.TTFTMs, a.E2ELMs, b.E2ELMs)
		}
		if !near(a.TPOTMs, b.TPOTMs) || !slices.Equal(a.ITLMs, b.ITLMs) || a.OutputTokens != b.OutputTokens || *a.CachedTokens != *b.CachedTokens {
			t.Errorf("request %d: TPOT %.4f → %.4f, tokens %d → %d, cached %d → %d: want unchanged", i, a.TPOTMs, b.TPOTMs,
				a.OutputTokens, b.OutputTokens, *a.CachedTokens, *b.CachedTokens)
		}
	}
}

// TestDroppedRequestsReleaseLoads: requests the client drops (in flight
// when max_seconds stops the run, or past their timeout) release the
// router's loads as the HTTP router's disconnects do, collocated and PD:
// every load is 0 after the run, so the trial does not fail
// RouterPolicyInvariant for what the driver ended.
func TestDroppedRequestsReleaseLoads(t *testing.T) {
	collocated := func(t *testing.T) (*virtual.Deployment, *router.Router) {
		ws := workers(t, 2, sim.RoleCollocated)
		cfg := routerconfig.Default()
		cfg.Policy = "cache_aware"
		cfg.WorkerURLs = []string{ws[0].URL, ws[1].URL}
		return deploy(t, ws, cfg)
	}
	pd := func(t *testing.T) (*virtual.Deployment, *router.Router) {
		ws := append(workers(t, 2, sim.RolePrefill), workers(t, 2, sim.RoleDecode)...)
		cfg := routerconfig.Default()
		cfg.PDDisaggregation, cfg.KVConnector = true, "nixl"
		cfg.PrefillPolicy, cfg.DecodePolicy = "power_of_two", "cache_aware"
		cfg.PrefillURLs, cfg.DecodeURLs = []string{ws[0].URL, ws[1].URL}, []string{ws[2].URL, ws[3].URL}
		return deploy(t, ws, cfg)
	}
	const timeout = 600 * time.Millisecond
	for _, c := range []struct {
		name   string
		deploy func(*testing.T) (*virtual.Deployment, *router.Router)
		adjust func(*driver.Config)
		check  func(s driver.Summary) bool
	}{
		{"collocated/max_seconds", collocated, func(dc *driver.Config) { dc.Workload.MaxSeconds = 0.4 },
			func(s driver.Summary) bool { return s.Incomplete > 0 && s.NotSent > 0 }},
		{"pd/max_seconds", pd, func(dc *driver.Config) { dc.Workload.MaxSeconds = 0.4 },
			func(s driver.Summary) bool { return s.Incomplete > 0 && s.NotSent > 0 }},
		{"collocated/timeout", collocated, func(dc *driver.Config) { dc.Timeout = timeout },
			func(s driver.Summary) bool { return s.ErrorsByType["timeout"] > 0 && s.Completed > 0 }},
		{"pd/timeout", pd, func(dc *driver.Config) { dc.Timeout = timeout },
			func(s driver.Summary) bool { return s.ErrorsByType["timeout"] > 0 && s.Completed > 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, r := c.deploy(t)
			// Answers from about 10 to 240 tokens: some are in flight at
			// the stop, some pass the timeout and some do not.
			dc := sharedPrefix(5)
			dc.WarmupRequests, dc.ReadyCheckTimeout = -1, -1
			dc.Workload = driver.Workload{Kind: "random", InputLen: 64, OutputLen: 128, RangeRatio: 0.9}
			dc.NumPrompts = 40
			dc.Arrival = driver.Arrival{Kind: "poisson", RequestRate: 50}
			c.adjust(&dc)
			res, err := driver.Simulate(context.Background(), dc, d)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("completed %d, incomplete %d, not_sent %d, errors %v", s.Completed, s.Incomplete, s.NotSent, s.ErrorsByType)
			if !c.check(s) {
				t.Fatalf("completed %d, incomplete %d, not_sent %d, errors %v: the case did not happen", s.Completed, s.Incomplete, s.NotSent, s.ErrorsByType)
			}
			for url, n := range r.Loads() {
				if n != 0 {
					t.Errorf("load %d left on %s", n, url)
				}
			}
		})
	}
}

func deploy(t *testing.T, ws []virtual.Worker, cfg routerconfig.Config) (*virtual.Deployment, *router.Router) {
	t.Helper()
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		t.Fatal(err)
	}
	return d, d.Router()
}
