package sim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Concurrent transfers share the link: A (100 B) starts alone at 1 B/ns, B
// (100 B) joins after 50 ns; from then each gets half. A ends at 150 ns, B,
// alone again for its last 50 B, at 200 ns. A cancelled transfer leaves.
func TestKVLinkSharesBandwidth(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newKVLink(RealClock{}, 1) // 1 GB/s = 1 byte per ns
		start := time.Now()
		ends := make(chan [2]any, 3)
		run := func(name string, after time.Duration, bytes float64, ctx context.Context) {
			time.Sleep(after)
			err := l.transfer(ctx, bytes)
			ends <- [2]any{name, [2]any{time.Since(start), err}}
		}
		ctx, cancel := context.WithCancel(t.Context())
		go run("A", 0, 100, t.Context())
		go run("B", 50*time.Nanosecond, 100, t.Context())
		go run("C", 10*time.Nanosecond, 1e9, ctx) // leaves at 30 ns
		time.Sleep(30 * time.Nanosecond)
		cancel()
		got := map[string]time.Duration{}
		for range 3 {
			e := <-ends
			r := e[1].([2]any)
			if e[0] != "C" && r[1] != nil {
				t.Fatalf("%s: %v", e[0], r[1])
			}
			got[e[0].(string)] = r[0].(time.Duration)
		}
		// A: 10 B alone, 20 ns at half (10 B), then 20 ns alone (20 B), then
		// shared with B from 50 ns: 60 B left at half rate → 170 ns.
		// B: 60 B by 170 ns, 40 B alone → 210 ns.
		if got["A"] != 170*time.Nanosecond || got["B"] != 210*time.Nanosecond || got["C"] != 30*time.Nanosecond {
			t.Fatalf("ends A %v, B %v, C %v; want 170ns, 210ns, 30ns", got["A"], got["B"], got["C"])
		}
	})
}
