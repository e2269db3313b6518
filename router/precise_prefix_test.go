package router

import (
	"context"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// kvSims starts n sims publishing KV events (with replay) and returns them
// with the router's kv_events entries for them.
func (e *env) kvSims(n, blocks int) ([]*simtest.Worker, []KVEventsSource) {
	e.t.Helper()
	var ws []*simtest.Worker
	var srcs []KVEventsSource
	for range n {
		w := e.simWorker(sim.Options{
			Engine: engine.Config{NumGPUBlocksOverride: blocks, MaxModelLen: 1024},
			KVEvents: kvevents.Config{EnableKVCacheEvents: true, Publisher: "zmq",
				Endpoint: "tcp://127.0.0.1:0", ReplayEndpoint: "tcp://127.0.0.1:0"},
		})
		events, replay, err := w.Server().KVEventsEndpoint(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		ws = append(ws, w)
		srcs = append(srcs, KVEventsSource{Worker: w.URL, Endpoint: events, ReplayEndpoint: replay})
	}
	return ws, srcs
}

// A router with precise_prefix follows each worker's KV events (its
// metrics count the batches, no gap, no stale worker) and, on a
// shared-prefix trace sent one request at a time, reuses more of the
// workers' caches than round_robin on the same trace; so does the weighted
// policy with its default scorers (precise_prefix and load).
func TestPrecisePrefixRouterFollowsKVEvents(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	prompts, _ := sharedPrefixTrace(6, 6)
	run := func(policyName string) (float64, []*simtest.Worker, string) {
		ws, srcs := e.kvSims(3, 160) // 2560 tokens a worker: about six 420-token prompts
		cfg := testConfig(policyName, urls(ws)...)
		if cfg.FollowsKVEvents() {
			cfg.KVEvents = srcs
		}
		_, base := e.router(cfg)
		for _, p := range prompts {
			if res := e.Post(base+"/v1/completions", completion(p, 2, false)); res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
		}
		return e.prefixHitRate(ws), ws, base
	}
	ppRate, ws, base := run("precise_prefix")
	wRate, _, _ := run("weighted") // default scorers: precise_prefix and load
	rrRate, _, _ := run("round_robin")
	t.Logf("prefix-cache hit rate: precise_prefix %.3f, weighted %.3f, round_robin %.3f", ppRate, wRate, rrRate)
	if ppRate <= rrRate || wRate <= rrRate {
		t.Errorf("hit rates precise_prefix %.3f, weighted %.3f: want both above round_robin's %.3f", ppRate, wRate, rrRate)
	}
	fams := e.scrape(base)
	for _, w := range ws {
		worker := map[string]string{"worker": w.URL}
		if n := fams.Sum("vllm_router_kv_events_batches_total", worker); n == 0 {
			t.Errorf("no KV event batches applied for %s", w.URL)
		}
		for _, name := range []string{"vllm_router_kv_events_lost_total", "vllm_router_kv_events_stale"} {
			if n := fams.Sum(name, worker); n != 0 {
				t.Errorf("%s{worker=%q} = %v, want 0", name, w.URL, n)
			}
		}
	}
}
