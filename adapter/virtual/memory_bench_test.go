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

// heapProbe is a deployment that reads the live heap (after a GC) when
// the at-th request is sent: mid-run, with the run's state in memory.
type heapProbe struct {
	*virtual.Deployment
	at, sent int
	heap     uint64
}

func (h *heapProbe) Send(id int, route string, header http.Header, body []byte, at time.Duration) error {
	h.sent++
	if h.sent == h.at {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		h.heap = m.HeapAlloc
	}
	return h.Deployment.Send(id, route, header, body, at)
}

// BenchmarkVirtualMemory measures the live heap after GC at 90 % of a
// virtual run of N requests (4 engines, cache_aware, 16-token prompts, 4
// output tokens), with records kept and streamed into the summary. It
// reports the heap and its growth per request between sizes.
//
//	go test -run '^$' -bench VirtualMemory -benchtime 1x ./adapter/virtual
func BenchmarkVirtualMemory(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			var heaps []uint64
			sizes := []int{100_000, 300_000}
			for b.Loop() {
				heaps = heaps[:0]
				for _, n := range sizes {
					heaps = append(heaps, memoryRun(b, n, stream))
				}
			}
			b.ReportMetric(float64(heaps[0])/1e6, "MB-heap-100k")
			b.ReportMetric(float64(heaps[1])/1e6, "MB-heap-300k")
			b.ReportMetric(float64(heaps[1]-heaps[0])/float64(sizes[1]-sizes[0]), "B/extra-request")
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
	probe := &heapProbe{Deployment: d, at: n * 9 / 10}
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
	return probe.heap
}
