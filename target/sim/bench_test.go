package sim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// processCPU is the user+system CPU time of this process so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEightEnginesSixtyFourStreams measures the simulator's cost per
// generated token end to end: 8 engines on the realistic profile, 64
// concurrent streaming clients each, all in this process. The CPU figure
// includes the HTTP clients, so it bounds the simulator's own cost from
// above.
func BenchmarkEightEnginesSixtyFourStreams(b *testing.B) {
	const engines, streams, tokens = 8, 64, 128
	prof, err := sim.LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	urls := make([]string, engines)
	for i := range urls {
		urls[i] = simtest.Start(b, sim.Options{Profile: prof})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}}
	bodies := make([][]byte, streams)
	for i := range bodies {
		bodies[i], _ = json.Marshal(map[string]any{"model": model, "prompt": prompt(uint64(i), 256), "max_tokens": tokens,
			"ignore_eos": true, "temperature": 0, "stream": true})
	}
	var received int64
	var mu sync.Mutex
	cpu0, wall0 := processCPU(b), time.Now()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for _, u := range urls {
			for i := range streams {
				wg.Go(func() {
					n := streamCount(b, client, u+"/v1/completions", bodies[i])
					mu.Lock()
					received += int64(n)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	}
	b.StopTimer()
	cpu, wall := processCPU(b)-cpu0, time.Since(wall0)
	if want := int64(b.N * engines * streams * tokens); received != want {
		b.Fatalf("received %d tokens, want %d", received, want)
	}
	b.ReportMetric(cpu.Seconds()/float64(received)*1e6, "cpu-µs/token")
	b.ReportMetric(float64(received)/wall.Seconds(), "tokens/s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
}

// streamCount posts a streaming request and counts content chunks.
func streamCount(tb testing.TB, c *http.Client, url string, body []byte) int {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Error(err)
		return 0
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 6 && bytes.HasPrefix(line, []byte("data: {")) {
			n++
		}
		if err != nil {
			return n
		}
	}
}
