package router

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// BenchmarkPDTTFT measures a disaggregated stream's time to first token
// against the model (prefill step on P + KV transfer + one step on D) and
// against a collocated engine given the same prompt, in the same run.
// Each iteration sends a fresh 2000-token prompt (no prefix-cache hits) to
// both; the medians are reported as ratios.
//
//	go test -run '^$' -bench PDTTFT -benchtime 20x ./router/
func BenchmarkPDTTFT(b *testing.B) {
	e := loopback(b)
	P, D := e.pdSims(sim.RolePrefill, 1, pdTiming), e.pdSims(sim.RoleDecode, 1, pdTiming)
	coll := e.pdSims(sim.RoleCollocated, 1, pdTiming)
	_, base := e.router(pdSimConfig(P, D, "round_robin", "round_robin"))
	const n, tokens = 2000, 24
	model := pdTiming.StepTime(n, 0, 0) + pdTiming.TransferTime(n) + pdTiming.StepTime(1, 0, 0)
	collModel := pdTiming.StepTime(n, 0, 0)
	var pd, co []time.Duration
	seed := uint64(7)
	for b.Loop() {
		seed++
		body := completion(tokenizer.Generate(rand.New(rand.NewPCG(seed, 8)), n), tokens, true)
		_, c := e.streamTimed(coll[0].URL+"/v1/completions", body)
		_, d := e.streamTimed(base+"/v1/completions", body)
		co, pd = append(co, c), append(pd, d)
	}
	b.StopTimer()
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(pd)), "pd_ttft_ms")
	b.ReportMetric(ms(model), "pd_model_ms")
	b.ReportMetric(ms(median(pd))/ms(model), "pd_ttft_over_model")
	b.ReportMetric(ms(median(co)), "coll_ttft_ms")
	b.ReportMetric(ms(median(co))/ms(collModel), "coll_ttft_over_model")
	b.ReportMetric(ms(median(pd))/ms(median(co)), "pd_over_coll")
	b.ReportMetric(0, "ns/op") // one iteration is two requests: not meaningful
}
