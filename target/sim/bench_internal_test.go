package sim

import (
	"context"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// BenchmarkEngineCore measures the engine loop alone (scheduling, KV,
// prefix cache, metrics, token ids) for 8 ranks × 64 sequences, without
// HTTP: the simulator's own cost per generated token.
func BenchmarkEngineCore(b *testing.B) {
	const engines, streams, tokens = 8, 64, 128
	prof, _ := LookupProfile("h100-llama3-8b")
	ctx, cancel := context.WithCancel(b.Context())
	var loops sync.WaitGroup
	defer loops.Wait()
	defer cancel()
	var engs []*engine
	for range engines {
		srv, err := New(Options{Engine: engcfg.Config{Model: "bench"}, Profile: prof})
		if err != nil {
			b.Fatal(err)
		}
		e := srv.ranks[0]
		loops.Go(func() { e.run(ctx) })
		engs = append(engs, e)
	}
	prompts := make([][]int, streams)
	for i := range prompts {
		prompts[i] = tokenizer.Tokenize(tokenizer.Generate(rand.New(rand.NewPCG(uint64(i), 1)), 256))
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu0, wall0 := ru.Utime.Nano()+ru.Stime.Nano(), time.Now()
	generated := 0
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for ei, e := range engs {
			for i := range streams {
				key, _ := hashPrompt(uint64(ei), prompts[i], 0)
				s := newSeq("b", prompts[i], sampling{key: key}, tokens, "length", time.Now())
				e.submit(s)
				wg.Go(func() {
					seen := 0
					for done := false; !done; {
						<-s.notify
						var n int
						n, done = s.state()
						for ; seen < n; seen++ {
							_ = tokenizer.Piece(s.samp.token(seen), seen == 0)
						}
					}
				})
			}
		}
		wg.Wait()
		generated += engines * streams * tokens
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - cpu0)
	wall := time.Since(wall0)
	b.ReportMetric(cpu.Seconds()/float64(generated)*1e6, "cpu-µs/token")
	b.ReportMetric(float64(generated)/wall.Seconds(), "tokens/s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
}
