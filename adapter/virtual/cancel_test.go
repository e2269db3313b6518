package virtual_test

import (
	"context"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/sim"
)

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
