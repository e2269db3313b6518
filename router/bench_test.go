package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// BenchmarkOverhead measures what the router adds in front of one fast
// simulated worker, against talking to that worker directly, in the same
// run: latency p50/p99 from interleaved sequential requests, and maximum
// requests/s under a closed loop of 32 clients. Ratios are router ÷ direct.
//
//	go test -run '^$' -bench Overhead -benchtime 2000x ./router/
func BenchmarkOverhead(b *testing.B) {
	worker := simtest.Start(b, sim.Options{Engine: engine.Config{Model: simModel}})
	cfg := DefaultConfig()
	cfg.Policy, cfg.WorkerURLs = "round_robin", []string{worker}
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	routed := "http://" + ln.Addr().String()

	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}}
	body := completion("the router overhead benchmark prompt", 1, false)
	do := func(base string) time.Duration {
		start := time.Now()
		resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d from %s", resp.StatusCode, base)
		}
		return time.Since(start)
	}

	var direct, viaRouter []time.Duration
	for b.Loop() { // interleaved so drift hits both sides alike
		direct = append(direct, do(worker))
		viaRouter = append(viaRouter, do(routed))
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds())
	}
	b.ReportMetric(p(direct, 0.5), "direct_p50_us")
	b.ReportMetric(p(viaRouter, 0.5)-p(direct, 0.5), "added_p50_us")
	b.ReportMetric(p(viaRouter, 0.99)-p(direct, 0.99), "added_p99_us")
	b.ReportMetric(p(viaRouter, 0.5)/p(direct, 0.5), "p50_ratio")
	b.ReportMetric(p(viaRouter, 0.99)/p(direct, 0.99), "p99_ratio")

	throughput := func(base string) float64 {
		const clients, total = 32, 3000
		jobs := make(chan struct{}, total)
		for range total {
			jobs <- struct{}{}
		}
		close(jobs)
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range jobs {
					do(base)
				}
			})
		}
		wg.Wait()
		return total / time.Since(start).Seconds()
	}
	d, rt := throughput(worker), throughput(routed)
	b.ReportMetric(d, "direct_req/s")
	b.ReportMetric(rt, "router_req/s")
	b.ReportMetric(rt/d, "rps_ratio")
	b.ReportMetric(0, "ns/op") // per-iteration time is the sum of two requests: not meaningful
}
