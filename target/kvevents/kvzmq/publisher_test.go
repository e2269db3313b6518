package kvzmq

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/kvevents"
)

// The replay socket answers from its buffer of the last buffer_steps
// batches and says so when a start lies before it; a full send queue drops
// batches (counted) without losing them from the buffer.
func TestPublisherBufferAndQueueBounds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := Listen(ctx, kvevents.Config{EnableKVCacheEvents: true, Endpoint: "tcp://127.0.0.1:0",
		ReplayEndpoint: "tcp://127.0.0.1:0", BufferSteps: 2, MaxQueueSize: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if seq, err := p.Publish(kvevents.Batch{TS: float64(i)}); err != nil || seq != uint64(i) {
			t.Fatalf("Publish %d = %d, %v", i, seq, err)
		}
	}
	if p.Published() != 5 || p.Dropped() != 4 {
		t.Errorf("published %d, dropped %d; want 5 and 4 (queue of 1, nothing sending)", p.Published(), p.Dropped())
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() { p.Run(rctx) })

	err = Replay(ctx, p.ReplayEndpoint(), 0, func(uint64, kvevents.Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "buffer starts at 3, wanted 0") {
		t.Errorf("replay from 0 = %v, want the buffer's start named", err)
	}
	var got []float64
	if err := Replay(ctx, p.ReplayEndpoint(), 3, func(_ uint64, b kvevents.Batch) error {
		got = append(got, b.TS)
		return nil
	}); err != nil || len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("replay from 3 = %v, %v; want batches 3 and 4", got, err)
	}
}
