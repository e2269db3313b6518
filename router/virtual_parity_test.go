package router

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// decisionLog wraps a pool's policy and records every decision it makes: the
// pool, the chosen candidate and the outcome.
type decisionLog struct {
	policy.Policy
	pool string
	mu   *sync.Mutex
	log  *[]string
}

func (r decisionLog) Pick(req policy.Request, cands []policy.Candidate) (policy.Decision, bool) {
	d, ok := r.Policy.Pick(req, cands)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		*r.log = append(*r.log, fmt.Sprintf("%s:%s:%d", r.pool, cands[d.Index].ID, d.Outcome))
	}
	return d, ok
}

// Needs forwards the wrapped policy's needs, so the router still extracts
// the prompt text cache_aware matches on.
func (r decisionLog) Needs() policy.Needs {
	if n, ok := r.Policy.(policy.Needer); ok {
		return n.Needs()
	}
	return policy.Needs{}
}

// recordDecisions wraps every pool's policy of r; it must run before Serve.
func recordDecisions(r *Router) *[]string {
	log, mu := &[]string{}, &sync.Mutex{}
	for _, p := range r.pools {
		p.policy = decisionLog{Policy: p.policy, pool: p.name, mu: mu, log: log}
	}
	return log
}

// parityPrompts is a recorded request sequence: shared-prefix prompts of
// six groups, interleaved, some under routing_threshold.
func parityPrompts() []string {
	var out []string
	for i := range 30 {
		g := i % 6
		prefix := strings.Repeat(fmt.Sprintf("group %d shares this system prompt. ", g), 12)
		if i%5 == 4 {
			prefix = fmt.Sprintf("short %d", g)
		}
		out = append(out, completion(prefix+fmt.Sprintf(" question %d?", i), 2, false))
	}
	return out
}

// TestVirtualRoutingParity is issue 20's acceptance 5: the virtual path
// calls the router's own decision code. The same recorded request sequence
// is sent over HTTP to a router in front of simulated engines, and routed
// by Route on a second router of the same config and seed: both make the
// same decisions, pool by pool, in the same order (collocated cache_aware
// and power_of_two — the seeded source —, and PD with cache_aware decode, power_of_two prefill and a
// routing_threshold that sends short prompts straight to decode). Requests
// go one at a time, each after the router's loads are back to zero, so the
// load signal is the same under both clocks.
func TestVirtualRoutingParity(t *testing.T) {
	start := func(role sim.Role) string {
		return simtest.StartStoppable(t, sim.Options{Engine: engine.Config{Model: simModel}, Role: role}).URL
	}
	collocated := testConfig("cache_aware", start(""), start(""), start(""))
	collocated.CacheThreshold = 0.1
	p2c := testConfig("power_of_two", collocated.WorkerURLs...)
	pd := testConfig("cache_aware")
	pd.PDDisaggregation, pd.KVConnector = true, "nixl"
	pd.PrefillPolicy, pd.DecodePolicy, pd.RoutingThreshold = "power_of_two", "cache_aware", 40
	pd.PrefillURLs = []string{start(sim.RolePrefill), start(sim.RolePrefill)}
	pd.DecodeURLs = []string{start(sim.RoleDecode), start(sim.RoleDecode), start(sim.RoleDecode)}
	for name, cfg := range map[string]Config{"cache_aware": collocated, "power_of_two": p2c, "pd": pd} {
		t.Run(name, func(t *testing.T) {
			live, err := New(cfg, WithSeed(9))
			if err != nil {
				t.Fatal(err)
			}
			realLog := recordDecisions(live)
			serveOneByOne(t, live)

			virt, err := New(cfg, WithSeed(9))
			if err != nil {
				t.Fatal(err)
			}
			virtLog := recordDecisions(virt)
			for i, body := range parityPrompts() {
				x, err := virt.Route("/v1/completions", http.Header{}, []byte(body))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				x.EndPrefill()
				x.End()
			}
			if !slices.Equal(*realLog, *virtLog) {
				t.Fatalf("decisions differ:\nreal    %v\nvirtual %v", *realLog, *virtLog)
			}
			chosen := map[string]bool{}
			for _, d := range *realLog {
				chosen[d[:strings.LastIndex(d, ":")]] = true
			}
			hit := func(d string) bool { return strings.HasSuffix(d, fmt.Sprintf(":%d", policy.OutcomeCacheHit)) }
			if name == "cache_aware" && !slices.ContainsFunc(*realLog, hit) {
				t.Fatalf("no cache hit in %v: the sequence does not exercise the tree", *realLog)
			}
			if len(chosen) < 3 {
				t.Fatalf("only %d distinct choices in %v: the sequence does not exercise the policy", len(chosen), *realLog)
			}
			for url, n := range virt.Loads() {
				if n != 0 {
					t.Errorf("virtual load on %s is %d after every request ended, want 0", url, n)
				}
			}
		})
	}
}

// serveOneByOne serves live and sends it the parity prompts over HTTP, each
// after the loads of the one before are back to zero.
func serveOneByOne(t *testing.T, live *Router) {
	t.Helper()
	base := routertest.Serve(t, live)
	client := routertest.NewClient(t)
	for i, body := range parityPrompts() {
		if res := client.Post(base+"/v1/completions", body); res.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, res.Status, res.Body)
		}
		waitIdle(t, live)
	}
}

// waitIdle polls until every load of r is back to zero (the attempt's
// guard is released just after the client has its answer).
func waitIdle(t *testing.T, r *Router) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		idle := true
		for _, n := range r.Loads() {
			idle = idle && n == 0
		}
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loads never returned to zero: %v", r.Loads())
		}
		time.Sleep(time.Millisecond)
	}
}
