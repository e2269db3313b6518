package virtual_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/routerconfig"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// sendProbe is a deployment that calls onSend with each send's count
// (from 1) before the send, on the body path and the token path alike:
// where the memory benchmarks read the heap mid-run.
type sendProbe struct {
	*virtual.Deployment
	sent   int
	onSend func(n int)
}

func (p *sendProbe) Send(id int, route string, header http.Header, body []byte, at time.Duration) error {
	p.sent++
	p.onSend(p.sent)
	return p.Deployment.Send(id, route, header, body, at)
}

// SendPrompt is Send on the token path.
func (p *sendProbe) SendPrompt(id int, route string, header http.Header, pr driver.Prompt, at time.Duration) error {
	p.sent++
	p.onSend(p.sent)
	return p.Deployment.SendPrompt(id, route, header, pr, at)
}

// liveHeapAt is a probe of d that reads the live heap (after a GC) into
// *heap when the at-th request is sent: mid-run, with the run's state in
// memory.
func liveHeapAt(d *virtual.Deployment, at int, heap *uint64) *sendProbe {
	return &sendProbe{Deployment: d, onSend: func(n int) {
		if n == at {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			*heap = m.HeapAlloc
		}
	}}
}

// BenchmarkVirtualMemory measures the live heap after GC at 90 % of a
// virtual run (4 engines, cache_aware, random 16-token prompts, 4 output
// tokens, 400 requests/s, the policy's tree bounded at 4 MiB): records kept (the trial path) at 100k and 300k
// requests, records streamed into the summary and requests generated as
// they fall due at 100k and 1M. It reports both heaps and the growth per
// extra request.
//
//	go test -run '^$' -bench VirtualMemory -benchtime 1x -timeout 30m ./adapter/virtual
func BenchmarkVirtualMemory(b *testing.B) {
	for _, c := range []struct {
		stream bool
		sizes  [2]int
	}{{false, [2]int{100_000, 300_000}}, {true, [2]int{100_000, 1_000_000}}} {
		b.Run(fmt.Sprintf("stream=%v", c.stream), func(b *testing.B) {
			var heaps [2]uint64
			for b.Loop() {
				for i, n := range c.sizes {
					heaps[i] = memoryRun(b, n, c.stream)
				}
			}
			b.ReportMetric(float64(heaps[0])/1e6, fmt.Sprintf("MB-heap-%dk", c.sizes[0]/1000))
			b.ReportMetric(float64(heaps[1])/1e6, fmt.Sprintf("MB-heap-%dk", c.sizes[1]/1000))
			b.ReportMetric((float64(heaps[1])-float64(heaps[0]))/float64(c.sizes[1]-c.sizes[0]), "B/extra-request")
		})
	}
}

func memoryRun(b *testing.B, n int, stream bool) uint64 {
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	cfg := routerconfig.Default()
	cfg.Policy = "cache_aware"
	// The policy's prefix tree is bounded by max_tree_size (default 64 MiB,
	// trimmed every eviction interval), as in a served router: bound it at
	// 4 MiB every 10 s so the bound is reached well before 100k requests
	// and what remains is the virtual machinery's own memory.
	cfg.MaxTreeSize, cfg.EvictionIntervalSecs = 4<<20, 10
	ws := make([]virtual.Worker, 4)
	for i := range ws {
		ws[i] = virtual.Worker{URL: fmt.Sprintf("http://virtual-%03d.invalid:1", i), Options: sim.Options{Profile: prof, Engine: engine.Config{Model: "sim-model"}}}
		cfg.WorkerURLs = append(cfg.WorkerURLs, ws[i].URL)
	}
	rc := router.Config(cfg)
	d, err := virtual.New(ws, &rc, 1)
	if err != nil {
		b.Fatal(err)
	}
	var heap uint64
	probe := liveHeapAt(d, n*9/10, &heap)
	dc := driver.Config{BaseURL: virtual.BaseURL, Endpoint: driver.CompletionsEndpoint, Model: "sim-model", Seed: 1, NumPrompts: n, WarmupRequests: -1,
		Workload: driver.Workload{Kind: "random", InputLen: 16, OutputLen: 4},
		Arrival:  driver.Arrival{Kind: "poisson", RequestRate: 400}}
	res, err := driver.SimulateWith(context.Background(), dc, probe, driver.SimOptions{Stream: stream})
	if err != nil {
		b.Fatal(err)
	}
	if res.Summary.Completed != n {
		b.Fatalf("%d of %d completed", res.Summary.Completed, n)
	}
	return heap
}
