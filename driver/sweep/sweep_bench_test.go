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
// runs (issue 14, acceptance 5): on a simulated 8B/H100 engine capped at
// 16 sequences, it sweeps 5 rates, then runs each of those rates again on
// its own (a fresh constant-rate run with its own warm-up) and finds the
// highest whose share of requests within a 25 ms TTFT SLO reaches the same
// threshold. It reports both rates, the step between rates, and their
// distance in steps, which must be at most 1.
//
//	go test -run '^$' -bench SweepKnee -benchtime 1x ./driver/sweep/
func BenchmarkSweepKnee(b *testing.B) {
	p, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	url := simtest.Start(b, sim.Options{Profile: p, Engine: engine.Config{MaxNumSeqs: 16}})
	cfg := driver.Config{BaseURL: url, Model: simtest.DefaultModel, NumPrompts: 150, Seed: 1, WarmupRequests: 10,
		Workload: driver.Workload{Kind: "random", InputLen: 512, OutputLen: 32},
		Goodput:  driver.SLO{TTFTMs: 25}}
	for range b.N {
		res, err := sweep.Run(context.Background(), cfg, sweep.Options{Rates: 5})
		if err != nil {
			b.Fatal(err)
		}
		knee := res.KneePoint()
		if knee == nil {
			b.Fatal("the sweep found no knee")
		}
		step := (res.MaxRate - res.SyncRate) / 6
		fixed := 0.0
		for _, pt := range res.Points {
			if pt.Rate == 0 {
				continue
			}
			c := cfg
			c.Arrival = driver.Arrival{Kind: "constant", RequestRate: pt.Rate}
			r, err := driver.Run(context.Background(), c)
			if err != nil {
				b.Fatal(err)
			}
			good := 0
			for i := range r.Requests {
				if r.Requests[i].Success && r.Requests[i].TTFTMs <= cfg.Goodput.TTFTMs {
					good++
				}
			}
			share := float64(good) / float64(len(r.Requests))
			b.Logf("rate %.2f: sweep in-SLO %.3f, fixed run in-SLO %.3f (p99 TTFT %.1f ms)", pt.Rate, pt.Attainment, share, r.Summary.P99TTFTMs)
			if share >= sweep.DefaultAttainment {
				fixed = max(fixed, pt.Rate)
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
