package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkTree verifies every invariant the tree relies on: the byte account
// equals the footprint of what is reachable, each node is held by someone,
// a tenant on a node is on its parent too, every entry is on the LRU list
// exactly once and newer than its descendants' entries for the same tenant,
// and per-tenant character counts add up.
func checkTree(t testing.TB, tr *radix) {
	t.Helper()
	held := 0
	chars := map[*tenant]int{}
	entries := map[*entry]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		held += n.footprint()
		if len(n.keys) != len(n.kids) {
			t.Fatalf("node %q: %d keys, %d children", n.edge, len(n.keys), len(n.kids))
		}
		for i, c := range n.kids {
			if c.parent != n || c.edge == "" || c.edge[0] != n.keys[i] {
				t.Fatalf("child %q of %q is linked wrongly", c.edge, n.edge)
			}
			if len(c.entries) == 0 {
				t.Fatalf("node %q is held by nobody", c.edge)
			}
			for _, e := range c.entries {
				if e.n != c || entries[e] {
					t.Fatalf("entry of %s on %q is linked wrongly", e.t.id, c.edge)
				}
				entries[e] = true
				chars[e.t] += len(c.edge)
				if n.parent != nil && n.entryOf(e.t) == nil {
					t.Fatalf("%s holds %q but not its parent %q", e.t.id, c.edge, n.edge)
				}
			}
			walk(c)
		}
	}
	for model, root := range tr.roots {
		if root.edge != model || root.parent != nil || len(root.entries) != 0 || len(root.kids) == 0 {
			t.Fatalf("root of model %q is malformed (or empty and kept)", model)
		}
		walk(root)
	}
	if held != tr.held {
		t.Fatalf("tree accounts %d bytes, holds %d", tr.held, held)
	}
	pos := map[*entry]int{}
	for e := tr.lru.next; e != &tr.lru; e = e.next {
		if e.next.prev != e || !entries[e] {
			t.Fatalf("LRU list broken at %s on %q", e.t.id, e.n.edge)
		}
		pos[e] = len(pos)
	}
	if len(pos) != len(entries) {
		t.Fatalf("LRU list has %d entries, tree %d", len(pos), len(entries))
	}
	for e := range entries {
		if p := e.n.parent; p.parent != nil {
			if pos[p.entryOf(e.t)] >= pos[e] {
				t.Fatalf("%s: entry on %q is not newer than its child's", e.t.id, p.edge)
			}
		}
	}
	if len(chars) != len(tr.tenants) {
		t.Fatalf("%d tenants hold text, %d interned", len(chars), len(tr.tenants))
	}
	for ten, n := range chars {
		if ten.chars != n || tr.tenants[ten.id] != ten {
			t.Fatalf("%s counts %d characters, holds %d", ten.id, ten.chars, n)
		}
	}
}

// TestRadixMatchesOracle compares the tree with a naive model while
// nothing is evicted: the match for a set of candidates is the longest
// common prefix with any text sent to one of them, and the holders are the
// candidates achieving it.
func TestRadixMatchesOracle(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		var sb strings.Builder
		for range 1 + rnd.IntN(12) {
			sb.WriteByte("abc"[rnd.IntN(3)])
		}
		return sb.String()
	}
	tr := newRadix()
	sent := map[string]map[string][]string{} // model → tenant → texts
	var epoch uint64
	for op := range 3000 {
		model := fmt.Sprint("m", rnd.IntN(2))
		tenantID := fmt.Sprint("w", rnd.IntN(4))
		switch {
		case rnd.IntN(50) == 0:
			tr.forget(tenantID)
			for _, byTenant := range sent {
				delete(byTenant, tenantID)
			}
		case rnd.IntN(2) == 0:
			text := word() + word()
			tr.insert(model, text, tenantID)
			if sent[model] == nil {
				sent[model] = map[string][]string{}
			}
			sent[model][tenantID] = append(sent[model][tenantID], text)
		default:
			query := word() + word()
			epoch++
			allowed := map[string]bool{}
			for _, id := range []string{"w0", "w1", "w2", "w3"} {
				if rnd.IntN(2) == 0 {
					allowed[id] = true
					if ten := tr.tenants[id]; ten != nil {
						ten.epoch = epoch
					}
				}
			}
			want, wantHolders := 0, []string(nil)
			for id, texts := range sent[model] {
				if !allowed[id] {
					continue
				}
				for _, s := range texts {
					switch k := commonPrefix(s, query); {
					case k > want:
						want, wantHolders = k, []string{id}
					case k == want && k > 0 && !slices.Contains(wantHolders, id):
						wantHolders = append(wantHolders, id)
					}
				}
			}
			got, n := tr.match(model, query, epoch)
			var holders []string
			if n != nil {
				for _, e := range n.entries {
					if e.t.epoch == epoch {
						holders = append(holders, e.t.id)
					}
				}
			}
			slices.Sort(holders)
			slices.Sort(wantHolders)
			if got != want || !slices.Equal(holders, wantHolders) {
				t.Fatalf("op %d: match(%q) = %d %v, want %d %v", op, query, got, holders, want, wantHolders)
			}
		}
		checkTree(t, tr)
	}
}

// TestRadixEvictionKeepsInvariants drives random inserts, forgets and
// evictions under a small cap.
func TestRadixEvictionKeepsInvariants(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 6))
	p := newCacheAware(Params{CacheThreshold: 0.3, BalanceAbsThreshold: 8, BalanceRelThreshold: 1.5, MaxTreeSize: 4 << 10})
	cands := ids(5)
	for op := range 4000 {
		switch rnd.IntN(40) {
		case 0:
			p.Forget(cands[rnd.IntN(len(cands))].ID)
		case 1:
			p.p.MaxTreeSize = (1 + rnd.IntN(8)) << 10
			p.Evict()
		default:
			text := fmt.Sprintf("group %d %s question %d", rnd.IntN(6), strings.Repeat("x", rnd.IntN(200)), rnd.IntN(50))
			p.Pick(Request{Model: fmt.Sprint("m", rnd.IntN(3)), Text: text}, cands[:1+rnd.IntN(len(cands))])
		}
		if held := p.HeldBytes(); held > p.p.MaxTreeSize {
			t.Fatalf("op %d: %d bytes held, cap %d", op, held, p.p.MaxTreeSize)
		}
		checkTree(t, p.tree)
	}
}

// prompts yields distinct prompts of about 2k tokens (8000 bytes), cut
// from one random buffer so generating them costs next to nothing.
func prompts() func(i int) string {
	rnd := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = "abcdefghij klmnopqrstuvwxyz "[rnd.IntN(28)]
	}
	const size = 8000
	return func(i int) string {
		off := (i * 7919) % (len(buf) - size)
		return fmt.Sprintf("request %d: ", i) + string(buf[off:off+size])
	}
}

// TestCacheAwareHeapBoundedByCap is issue 16's memory bound: after 50k
// distinct 2k-token prompts at the default cap, the live heap grew by at
// most 2 × max_tree_size + 64 MB. It measures the process heap, so it does
// not run in parallel; -short sends 5k prompts (enough to pass the cap
// several times over is 50k; 5k fills it half).
func TestCacheAwareHeapBoundedByCap(t *testing.T) {
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	const limit = 1 << 26 // router.DefaultMaxTreeSize
	next := prompts()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	p := newCacheAware(Params{CacheThreshold: 0.3, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, MaxTreeSize: limit})
	cands := ids(8)
	text := 0
	for i := range n {
		s := next(i)
		text += len(s)
		p.Pick(Request{Model: "m", Text: s}, cands)
	}
	grown := int64(heap()) - int64(before)
	held := p.HeldBytes()
	t.Logf("%d prompts, %d MB of text sent; tree accounts %.1f MB; heap grew %.1f MB (%.2f× the account)",
		n, text>>20, float64(held)/(1<<20), float64(grown)/(1<<20), float64(grown)/float64(max(held, 1)))
	if held > limit {
		t.Errorf("tree accounts %d bytes, cap %d", held, limit)
	}
	if bound := int64(2*limit + 64<<20); grown > bound {
		t.Errorf("heap grew by %d bytes after %d prompts, bound 2 × max_tree_size + 64 MB = %d", grown, n, bound)
	}
	// The account must describe real memory: the heap holds at least the
	// text the tree says it holds.
	if text > limit && grown < int64(held)/2 {
		t.Errorf("heap grew by %d bytes but the tree accounts %d: the account overstates memory", grown, held)
	}
	runtime.KeepAlive(p)
}

// BenchmarkCacheAwarePickEvicting fills the tree to the default cap with
// 2k-token prompts, then times every Pick while each one evicts: the
// longest pick is the longest any request waits behind eviction (issue 16
// asks for ≤ 5 ms). On a shared machine the wall-clock maximum includes
// waiting for a core and GC pauses, so the pick's own thread CPU time is
// reported too (Linux), and a control — a few microseconds of plain work
// timed right after each pick — shows how often the machine alone stalls a
// call. Figures: max/p99/p50_pick_us (wall), max_pick_cpu_us,
// picks_over_5ms, control_max_us, control_over_5ms, tree_MB.
//
//	go test -run '^$' -bench PickEvicting -benchtime 20000x ./router/policy/
func BenchmarkCacheAwarePickEvicting(b *testing.B) {
	const limit = 1 << 26
	next := prompts()
	p := newCacheAware(Params{CacheThreshold: 0.3, BalanceAbsThreshold: 64, BalanceRelThreshold: 1.5, MaxTreeSize: limit})
	cands := ids(8)
	i := 0
	for ; p.HeldBytes() < limit-16<<10; i++ {
		p.Pick(Request{Model: "m", Text: next(i)}, cands)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var lat []time.Duration
	var maxCPU, maxControl time.Duration
	over, controlOver := 0, 0
	var sink uint64
	for b.Loop() {
		s := next(i)
		i++
		cpu0, _ := threadCPU()
		start := time.Now()
		p.Pick(Request{Model: "m", Text: s}, cands)
		d := time.Since(start)
		cpu1, _ := threadCPU()
		lat = append(lat, d)
		maxCPU = max(maxCPU, cpu1-cpu0)
		if d > 5*time.Millisecond {
			over++
		}
		// Control: a few microseconds of plain work, timed the same way
		// right after, shows how often the machine alone stalls a call.
		start = time.Now()
		for k := range 2000 {
			sink = sink*31 + uint64(k)
		}
		c := time.Since(start)
		maxControl = max(maxControl, c)
		if c > 5*time.Millisecond {
			controlOver++
		}
	}
	runtime.KeepAlive(sink)
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(1), "max_pick_us")
	b.ReportMetric(q(0.99), "p99_pick_us")
	b.ReportMetric(q(0.5), "p50_pick_us")
	b.ReportMetric(float64(maxCPU.Nanoseconds())/1e3, "max_pick_cpu_us")
	b.ReportMetric(float64(over), "picks_over_5ms")
	b.ReportMetric(float64(maxControl.Nanoseconds())/1e3, "control_max_us")
	b.ReportMetric(float64(controlOver), "control_over_5ms")
	b.ReportMetric(float64(p.HeldBytes())/(1<<20), "tree_MB")
	b.ReportMetric(0, "ns/op")
}
