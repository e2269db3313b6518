package router

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// 4. A disaggregated stream equals the collocated answer, arrives chunk by
// chunk, and its TTFT is prefill + modelled transfer + one decode step.
func TestPDAcceptanceStreamMatchesCollocated(t *testing.T) {
	e := loopback(t)
	P, D := pdSims(t, sim.RolePrefill, 1, pdTiming), pdSims(t, sim.RoleDecode, 1, pdTiming)
	coll := pdSims(t, sim.RoleCollocated, 1, pdTiming)
	_, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	const n, tokens = 2000, 24
	// TTFT = prefill step on P + KV transfer + one step on D computing the
	// last prompt token. The engines pace their steps on the wall clock and
	// their KV side channel needs real sockets, so this test cannot run on a
	// bubble's fake clock; it runs alone (not in parallel) and judges
	// wall-clock figures only where noise cannot make a correct router fail:
	// - every run: the text, and TTFT ≥ the model − 2 ms (clock rounding).
	//   Scheduling noise only ever adds latency, so a shorter TTFT means a
	//   leg or the transfer was skipped.
	// - at least one of up to 3 runs (fresh prompts: no prefix-cache hits):
	//   TTFT ≤ the model + 30 ms + 50 % (two HTTP hops, -race, shared
	//   cores), and the chunks spread over at least half the modelled decode
	//   time (a stream held back arrives all at once). A late client can
	//   fail either in one run; a router that buffers fails them in all.
	predicted := pdTiming.StepTime(n, 0, 0) + pdTiming.TransferTime(n) + pdTiming.StepTime(1, 0, 0)
	upper := predicted + 30*time.Millisecond + predicted/2
	decodeTime := time.Duration(tokens-1) * pdTiming.StepTime(0, 1, 0)
	runs := 0
	var misses []string
	for seed := uint64(7); runs < 3; seed++ {
		runs++
		body := completion(tokenizer.Generate(rand.New(rand.NewPCG(seed, 8)), n), tokens, true)
		want, collTTFT, _ := e.streamTimed(coll[0].URL+"/v1/completions", body)
		got, ttft, last := e.streamTimed(base+"/v1/completions", body)
		if got != want || got == "" {
			t.Fatalf("disaggregated text differs from collocated:\n%q\n%q", got, want)
		}
		t.Logf("run %d: TTFT collocated %v, disaggregated %v (model %v); chunks over %v", runs, collTTFT, ttft, predicted, last-ttft)
		if ttft < predicted-2*time.Millisecond {
			t.Fatalf("disaggregated TTFT %v is below the model %v − 2 ms: prefill or transfer was skipped", ttft, predicted)
		}
		switch {
		case ttft > upper:
			misses = append(misses, fmt.Sprintf("TTFT %v above model %v + 30 ms + 50%% (%v)", ttft, predicted, upper))
		case last-ttft < decodeTime/2:
			misses = append(misses, fmt.Sprintf("first chunk at %v, last at %v: %v apart, want ≥ %v (the router held the stream back)", ttft, last, last-ttft, decodeTime/2))
		default:
			misses = nil
		}
		if misses == nil {
			break
		}
	}
	if misses != nil {
		t.Errorf("no run within the timing bounds: %v", misses)
	}
	if ok := e.simMetric(D, "vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); ok != float64(runs) {
		t.Errorf("decode engine made %v good pulls, want %d (one per request)", ok, runs)
	}
}

// 6. Load is exact on both legs: while a decode stream is open the decode
// worker holds it and the prefill worker does not; every load is 0 after
// the client leaves (startRouter's cleanup checks all pools after every test).
func TestPDAcceptanceDecodeLoadUntilStreamEnds(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := pdSims(t, sim.RolePrefill, 1, fast), pdSims(t, sim.RoleDecode, 1, fast)
	D[0].SetFaults(sim.Faults{Stall: true, StallAfterTokens: 2})
	r, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := e.Send(ctx, http.MethodPost, base+"/v1/completions", completion("hold the stream", 16, true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for chunks := 0; chunks < 2 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			chunks++
		}
	}
	if l := r.Loads(); l[D[0].URL] != 1 || l[P[0].URL] != 0 {
		t.Fatalf("mid-stream loads %v: want 1 on decode, 0 on prefill", l)
	}
	cancel()
	routertest.WaitLoadsZero(t, r)
}
