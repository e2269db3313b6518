package router

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/router/routertest"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// 4. A disaggregated stream equals the collocated answer and comes from a
// real KV pull. That it arrives chunk by chunk is shown without a clock by
// TestPDAcceptanceDecodeLoadUntilStreamEnds (chunks reach the client while
// the decode engine is stalled mid-stream); how its TTFT compares with the
// model (prefill + transfer + one decode step) is a measurement, reported
// as ratios by BenchmarkPDTTFT.
func TestPDAcceptanceStreamMatchesCollocated(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	P, D := e.pdSims(sim.RolePrefill, 1, pdTiming), e.pdSims(sim.RoleDecode, 1, pdTiming)
	coll := e.pdSims(sim.RoleCollocated, 1, pdTiming)
	_, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	body := completion(tokenizer.Generate(rand.New(rand.NewPCG(7, 8)), 2000), 24, true)
	want, _ := e.streamTimed(coll[0].URL+"/v1/completions", body)
	got, _ := e.streamTimed(base+"/v1/completions", body)
	if got != want || got == "" {
		t.Fatalf("disaggregated text differs from collocated:\n%q\n%q", got, want)
	}
	if ok := e.simMetric(D, "vllm:kv_transfer_pulls_total", map[string]string{"result": "ok"}); ok != 1 {
		t.Errorf("decode engine made %v good pulls, want 1", ok)
	}
}

// 6. Load is exact on both legs: while a decode stream is open the decode
// worker holds it and the prefill worker does not; every load is 0 after
// the client leaves (the router's cleanup checks all pools after every
// test). The two chunks read while the decode engine is stalled also show
// the router relays the stream as it comes instead of holding it to the end.
func TestPDAcceptanceDecodeLoadUntilStreamEnds(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	fast, _ := sim.LookupProfile("fast")
	P, D := e.pdSims(sim.RolePrefill, 1, fast), e.pdSims(sim.RoleDecode, 1, fast)
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
