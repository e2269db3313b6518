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
// With nginx installed (`make bench-peers`), nginx as a reverse proxy to the
// same worker is measured in the same loops and reported as nginx ÷ direct
// and router ÷ nginx.
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
	bases := []string{worker, "http://" + ln.Addr().String()} // direct, router[, nginx]
	if nginx, ok := startNginx(b, worker); ok {
		bases = append(bases, nginx)
	} else {
		b.Log("nginx not installed: no peer figures (make bench-peers installs it)")
	}

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

	lat := make([][]time.Duration, len(bases))
	for b.Loop() { // interleaved so drift hits every side alike
		for i, base := range bases {
			lat[i] = append(lat[i], do(base))
		}
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds())
	}
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
	rps := make([]float64, len(bases))
	for i, base := range bases {
		rps[i] = throughput(base)
	}

	b.ReportMetric(p(lat[0], 0.5), "direct_p50_us")
	b.ReportMetric(rps[0], "direct_req/s")
	for i, name := range []string{"", "router", "nginx"}[1:len(bases)] {
		i++
		b.ReportMetric(p(lat[i], 0.5)-p(lat[0], 0.5), name+"_added_p50_us")
		b.ReportMetric(p(lat[i], 0.99)-p(lat[0], 0.99), name+"_added_p99_us")
		b.ReportMetric(p(lat[i], 0.5)/p(lat[0], 0.5), name+"_p50_ratio")
		b.ReportMetric(p(lat[i], 0.99)/p(lat[0], 0.99), name+"_p99_ratio")
		b.ReportMetric(rps[i], name+"_req/s")
		b.ReportMetric(rps[i]/rps[0], name+"_rps_ratio")
	}
	if len(bases) == 3 {
		b.ReportMetric(rps[1]/rps[2], "router_vs_nginx_rps_ratio")
		b.ReportMetric((p(lat[1], 0.5)-p(lat[0], 0.5))/max(p(lat[2], 0.5)-p(lat[0], 0.5), 1), "router_vs_nginx_added_p50_ratio")
	}
	b.ReportMetric(0, "ns/op") // per-iteration time is the sum of several requests: not meaningful
}
