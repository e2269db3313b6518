package router

import (
	"fmt"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
)

// benchPool is a pool of n workers (never dialled) choosing with name.
func benchPool(tb testing.TB, name string, n int) *Pool {
	tb.Helper()
	pol, err := policy.New(name, policy.Params{CacheThreshold: 0.3, BalanceAbsThreshold: 64,
		BalanceRelThreshold: 1.5, MaxTreeSize: 1 << 26}, policy.NewLockedRand(1))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig().CircuitBreaker
	p := NewPool("bench", pol, 1, func(string) *Breaker { return NewBreaker(cfg, time.Now, nil) })
	for i := range n {
		p.Add(fmt.Sprintf("http://10.0.%d.%d:8000", i/256, i%256))
	}
	return p
}

// TestPoolPickRoundRobinAllocatesNothing is issue 16's acceptance 3: a
// round_robin pick over 128 workers reads the copy-on-write member list and
// recycled candidate lists, so it allocates nothing.
func TestPoolPickRoundRobinAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop recycled lists; run without -race")
	}
	p := benchPool(t, policy.RoundRobin, 128)
	seen := map[string]bool{}
	allocs := testing.AllocsPerRun(1000, func() {
		tg, _, ok := p.pick(nil, policy.Request{Model: "m"}, false)
		if !ok {
			t.Fatal("no target")
		}
		if len(seen) < 128 {
			seen[tg.w.url] = true
		}
	})
	if allocs != 0 {
		t.Errorf("round_robin pick over 128 workers allocates %.1f times, want 0", allocs)
	}
	if len(seen) != 128 {
		t.Errorf("1000 round_robin picks reached %d of 128 workers", len(seen))
	}
}

// TestPoolMembersFollowChanges checks the copy-on-write member list: sorted,
// current after every Add and Remove, and a list handed out earlier is
// never modified.
func TestPoolMembersFollowChanges(t *testing.T) {
	t.Parallel()
	p := benchPool(t, policy.RoundRobin, 0)
	for _, u := range []string{"http://c", "http://a", "http://b"} {
		p.Add(u)
	}
	before := p.Workers()
	p.Remove("http://b")
	p.Add("http://0")
	got := []string{}
	for _, w := range p.Workers() {
		got = append(got, w.url)
	}
	if fmt.Sprint(got) != "[http://0 http://a http://c]" {
		t.Errorf("members = %v", got)
	}
	if before[0].url != "http://a" || before[1].url != "http://b" || len(before) != 3 {
		t.Errorf("an earlier member list changed: %v", before)
	}
}

// BenchmarkPoolPick measures one pick over 128 workers per policy
// (allocations reported; acceptance 3 wants 0 for round_robin).
//
//	go test -run '^$' -bench PoolPick -benchmem ./router/
func BenchmarkPoolPick(b *testing.B) {
	for _, name := range policy.Names() {
		b.Run(name, func(b *testing.B) {
			p := benchPool(b, name, 128)
			req := policy.Request{Model: "m", Text: "a short prompt for the benchmark", HashKey: "ip:127.0.0.1"}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := p.pick(nil, req, false); !ok {
					b.Fatal("no target")
				}
			}
		})
	}
}
