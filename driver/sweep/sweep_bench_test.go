package sweep_test

import (
	"context"
	"math"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/sweep"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// BenchmarkSweepKnee checks a sweep's knee against separate fixed-rate
// runs (issue 14, acceptance 5) on a workload where the SLO binds inside
// the swept range: 3000-token prompts on a simulated 8B/H100 engine, so
// every prefill chunk slows the decodes batched with it and TPOT grows with
// the rate (about 10 ms alone, 50 ms near saturation), against a 25 ms TPOT
// SLO. Prefix caching is off, so runs that repeat the prompts share no
// cache. It sweeps 8 rates, requires the knee strictly inside them (some
// rate above it misses), then runs the rates one step below the knee, at
// it, and one and two steps above on their own (fresh constant-rate runs
// with their own warm-up) and finds the highest that meets the SLO. It
// reports the knee, that rate, the step and their distance in steps,
// which must be at most 1. About 8 minutes on a busy 2-core machine (-v
// prints every run):
//
//	go test -run '^$' -bench SweepKnee -benchtime 1x -timeout 30m -v ./driver/sweep/
func BenchmarkSweepKnee(b *testing.B) {
	p, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	off := false
	url := simtest.Start(b, sim.Options{Profile: p, Engine: engine.Config{EnablePrefixCaching: &off}})
	cfg := driver.Config{BaseURL: url, Model: simtest.DefaultModel, NumPrompts: 150, Seed: 1, WarmupRequests: 10,
		Workload: driver.Workload{Kind: "random", InputLen: 3000, OutputLen: 64},
		Goodput:  driver.SLO{TPOTMs: 25}}
	const rates = 8
	for range b.N {
		res, err := sweep.Run(context.Background(), cfg, sweep.Options{Rates: rates})
		if err != nil {
			b.Fatal(err)
		}
		for _, pt := range res.Points {
			b.Logf("sweep %-11s offered %6.2f achieved %6.2f in-SLO %.3f p99 TPOT %5.1f ms", pt.Label, pt.Rate,
				pt.Result.Summary.RequestThroughput, pt.Attainment, pt.Result.Summary.P99TPOTMs)
		}
		knee := res.KneePoint()
		if knee == nil {
			b.Fatal("the sweep found no knee: no rate met the SLO")
		}
		last := res.Points[len(res.Points)-1]
		if knee.Rate == last.Rate {
			b.Fatalf("the knee %.2f req/s is the highest rate swept: the SLO did not bind inside the range", knee.Rate)
		}
		step := (res.MaxRate - res.SyncRate) / (rates + 1)
		fixed := 0.0
		for _, rate := range []float64{knee.Rate - step, knee.Rate, knee.Rate + step, knee.Rate + 2*step} {
			if rate <= res.SyncRate {
				continue
			}
			c := cfg
			c.Arrival = driver.Arrival{Kind: "constant", RequestRate: rate}
			r, err := driver.Run(context.Background(), c)
			if err != nil {
				b.Fatal(err)
			}
			good := 0
			for i := range r.Requests {
				if r.Requests[i].Success && r.Requests[i].TPOTMs <= cfg.Goodput.TPOTMs {
					good++
				}
			}
			share := float64(good) / float64(len(r.Requests))
			b.Logf("fixed rate %6.2f: in-SLO %.3f (p99 TPOT %.1f ms)", rate, share, r.Summary.P99TPOTMs)
			if share >= sweep.DefaultAttainment {
				fixed = max(fixed, rate)
			}
		}
		steps := math.Abs(knee.Rate-fixed) / step
		b.ReportMetric(knee.Rate, "knee_rps")
		b.ReportMetric(fixed, "fixed_rps")
		b.ReportMetric(step, "step_rps")
		b.ReportMetric(steps, "steps_apart")
		if steps > 1+1e-9 {
			b.Errorf("knee %.2f req/s is %.2f steps from the fixed-rate answer %.2f req/s", knee.Rate, steps, fixed)
		}
	}
}
