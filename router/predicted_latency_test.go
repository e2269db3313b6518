package router

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// sloTally counts, from the engines' own request timings, how many
// requests met a TTFT and TPOT objective.
type sloTally struct {
	mu         sync.Mutex
	ttft, tpot time.Duration
	met, all   int
}

func (s *sloTally) observe(rt sim.RequestTiming) {
	if rt.Tokens < 2 {
		return
	}
	ttft := rt.First.Sub(rt.Received)
	tpot := rt.Last.Sub(rt.First) / time.Duration(rt.Tokens-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all++
	if ttft <= s.ttft && tpot <= s.tpot {
		s.met++
	}
}

// Acceptance 3 (issue 31): on four engines, one of them four times slower
// (a profile override), predicted_latency learns the slow engine's
// latencies from the workers' histograms, sends it fewer requests than
// least_loaded does, and more requests meet their SLO (headers
// x-slo-ttft-ms / x-slo-tpot-ms), counted from the engines' own timings.
func TestPredictedLatencyAvoidsTheSlowEngine(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	normal := sim.Profile{Name: "normal", StepBaseMs: 4, PrefillUsPerToken: 20, DecodeUsPerSeq: 100,
		KVBytesPerToken: 131072, LinkGBps: 50, TransferLatencyMs: 1, NumGPUBlocks: 4096, Source: "test"}
	slow := normal
	slow.Name, slow.StepBaseMs, slow.PrefillUsPerToken, slow.DecodeUsPerSeq = "slow", 16, 80, 400
	// The slow engine's TPOT (about 16 ms) misses the objective at any
	// load, the others' (about 4 ms) meet it with room for a busy host.
	const sloTTFT, sloTPOT = 60 * time.Millisecond, 12 * time.Millisecond
	type arm struct {
		name  string
		r     *Router
		base  string
		ws    []*simtest.Worker
		tally *sloTally
	}
	setup := func(policyName string) *arm {
		a := &arm{name: policyName, tally: &sloTally{ttft: sloTTFT, tpot: sloTPOT}}
		for i := range 4 {
			p := normal
			if i == 3 {
				p = slow
			}
			w := e.simWorker(sim.Options{Profile: p})
			w.Server().ObserveRequests(a.tally.observe)
			a.ws = append(a.ws, w)
		}
		cfg := testConfig(policyName, urls(a.ws)...)
		cfg.LoadCheckIntervalSecs = 0.2
		a.r, a.base = e.router(cfg)
		return a
	}
	// Both arms run at once, so a busy host slows both alike.
	arms := []*arm{setup("least_loaded"), setup("predicted_latency")}
	var wg sync.WaitGroup
	for _, a := range arms {
		wg.Go(func() {
			fanOut(240, 8, func(i int) {
				res := e.Post(a.base+"/v1/completions", completion(fmt.Sprint("question ", i, " about the slow engine"), 12, false),
					"X-Slo-Ttft-Ms", "60", "X-Slo-Tpot-Ms", "12")
				if res.Status != 200 {
					t.Errorf("%s: status %d: %s", a.name, res.Status, res.Body)
				}
			})
		})
	}
	wg.Wait()
	share := func(a *arm) float64 {
		by := processedBy(a.r, a.ws)
		t.Logf("%s: requests per worker %v, SLO decisions %v", a.name, by, e.scrape(a.base).By("vllm_router_slo_decisions_total", "outcome"))
		return by[a.ws[3].URL] / 240
	}
	llShare, plShare := share(arms[0]), share(arms[1])
	llTally, plTally := arms[0].tally, arms[1].tally
	t.Logf("slow engine's share: least_loaded %.3f, predicted_latency %.3f; SLO met: least_loaded %d/%d, predicted_latency %d/%d",
		llShare, plShare, llTally.met, llTally.all, plTally.met, plTally.all)
	if plShare >= llShare {
		t.Errorf("predicted_latency sent the slow engine %.3f of requests, least_loaded %.3f: want fewer", plShare, llShare)
	}
	if plTally.met <= llTally.met {
		t.Errorf("SLO met: predicted_latency %d, least_loaded %d: want more", plTally.met, llTally.met)
	}
}

// A malformed SLO header is the client's error, named in a 400.
func TestSLOHeaderValidated(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(1)
	_, base := e.router(testConfig("predicted_latency", urls(ws)...))
	res := e.Post(base+"/v1/completions", completion("hi", 2, false), "X-Slo-Ttft-Ms", "soon")
	if res.Status != 400 || !strings.Contains(res.Body, `header X-Slo-Ttft-Ms`) || !strings.Contains(res.Body, `\"soon\"`) {
		t.Errorf("status %d %s: want a 400 naming the header and value", res.Status, res.Body)
	}
}

// The virtual clock carries no latency scrapes yet: a policy that needs
// them is refused there rather than left guessing. KV events it delivers
// (adapter/virtual), so the policies following them run.
func TestVirtualRefusesNetworkLearningPolicies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy  string
		scorers []Scorer
		refused bool
	}{
		{"precise_prefix", nil, false},
		{"predicted_latency", nil, true},
		{"weighted", nil, false}, // default scorers: precise_prefix and load
		{"weighted", []Scorer{{Name: "predicted_latency", Weight: 1}}, true},
		{"weighted", []Scorer{{Name: "load", Weight: 1}, {Name: "prefix", Weight: 1}}, false},
		{"cache_aware", nil, false},
	} {
		cfg := testConfig(c.policy, "http://127.0.0.1:1")
		cfg.Scorers = c.scorers
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.VirtualReady(); (err != nil) != c.refused {
			t.Errorf("%s %v: VirtualReady = %v, want refused %v", c.policy, c.scorers, err, c.refused)
		}
	}
}
