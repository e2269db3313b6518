package virtual_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// cpuTime is this process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkVirtualSpeed is issue 20's speed benchmark: a deployment of
// 4, 16 and 64 engines behind a cache_aware router, Poisson traffic at 2
// requests/s per engine (random 512-token prompts, 128 output tokens), run
// on the virtual clock. It reports requests simulated per CPU-second and
// the ratio of simulated time to CPU time (x real time), both from one run.
// The CPU time includes generating the request stream; records stream
// into the summary.
//
//	go test -run '^$' -bench VirtualSpeed -benchtime 1x ./adapter/virtual
func BenchmarkVirtualSpeed(b *testing.B) {
	for _, engines := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("engines=%d", engines), func(b *testing.B) {
			speed(b, engines, 300*engines, 2*float64(engines))
		})
	}
	// The target: a 60-minute trace of about 24,000 requests on 8
	// engines in under 5 s of CPU (about 700x real time).
	b.Run("engines=8/60min-24k", func(b *testing.B) { speed(b, 8, 24000, 24000.0/3600) })
	// Issue 29: a mixture of experts (Qwen3-30B-A3B derived on H100) costs
	// at most 1.5x the dense profile per request.
	b.Run("engines=16/moe", func(b *testing.B) {
		data, err := os.ReadFile("../../target/sim/configs/qwen3-30b-a3b.json")
		if err != nil {
			b.Fatal(err)
		}
		prof, err := sim.DeriveProfile("h100", data, engine.Config{Model: "sim-model"})
		if err != nil {
			b.Fatal(err)
		}
		speedOf(b, prof, 16, 300*16, 2*16)
	})
}

// speed runs prompts requests at rate on engines engines and reports
// requests per CPU-second, x real time and CPU seconds per run.
func speed(b *testing.B, engines, prompts int, rate float64) {
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	speedOf(b, prof, engines, prompts, rate)
}

// speedOf is speed on profile prof.
func speedOf(b *testing.B, prof sim.Profile, engines, prompts int, rate float64) {
	var reqs, runs int
	var simulated, cpu time.Duration
	for b.Loop() {
		ws := make([]virtual.Worker, engines)
		cfg := routerconfig.Default()
		cfg.Policy = "cache_aware"
		for i := range ws {
			ws[i] = virtual.Worker{URL: fmt.Sprintf("http://virtual-%03d.invalid:1", i), Options: sim.Options{Profile: prof, Engine: engine.Config{Model: "sim-model"}}}
			cfg.WorkerURLs = append(cfg.WorkerURLs, ws[i].URL)
		}
		rc := router.Config(cfg)
		d, err := virtual.New(ws, &rc, 1)
		if err != nil {
			b.Fatal(err)
		}
		dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 1, NumPrompts: prompts, WarmupRequests: -1,
			Workload: driver.Workload{Kind: "random", InputLen: 512, OutputLen: 128},
			Arrival:  driver.Arrival{Kind: "poisson", RequestRate: rate}}
		c0 := cpuTime(b)
		res, err := driver.SimulateWith(context.Background(), dc, d, driver.SimOptions{Stream: true})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - c0
		runs++
		reqs += res.Summary.Completed
		simulated += time.Duration(res.Summary.Duration * float64(time.Second))
	}
	b.ReportMetric(float64(reqs)/cpu.Seconds(), "req/cpu-s")
	b.ReportMetric(simulated.Seconds()/cpu.Seconds(), "x-realtime")
	b.ReportMetric(cpu.Seconds()/float64(runs), "cpu-s/run")
}
