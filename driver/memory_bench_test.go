package driver_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
)

// BenchmarkDriverMemory runs b.N requests (closed loop of 64 against a fast
// simulated engine in a child process; 1024 input, 16 output tokens) and
// reports the heap the run keeps per request afterwards (the Result
// included: per-request records) and the peak live heap per request
// during it. Memory that does not grow with the request count divides
// away as b.N grows.
//
//	go test -run '^$' -bench DriverMemory -benchtime 20000x ./driver/
func BenchmarkDriverMemory(b *testing.B) {
	url := startSimProcess(b)
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: b.N, WarmupRequests: -1, ReadyCheckTimeout: -1, Seed: 1,
		Workload: driver.Workload{Kind: "random", InputLen: 1024, OutputLen: 16},
		Arrival:  driver.Arrival{MaxConcurrency: 64}}
	live := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	heap := func() uint64 {
		runtime.GC()
		return live()
	}
	before := heap()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				peak = max(peak, live())
			}
		}
	})
	b.ResetTimer()
	res, err := driver.Run(context.Background(), cfg)
	b.StopTimer()
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if res.Summary.Failed > 0 {
		b.Fatalf("%d requests failed: %v", res.Summary.Failed, res.Summary.ErrorsByType)
	}
	after := heap()
	b.ReportMetric(float64(int64(after)-int64(before))/float64(b.N), "kept-B/req")
	b.ReportMetric(float64(int64(peak)-int64(before))/float64(b.N), "peak-B/req")
	b.ReportMetric(0, "ns/op")
	runtime.KeepAlive(res)
}
