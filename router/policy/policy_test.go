package policy

import (
	"fmt"
	"testing"
)

func ids(n int) []Candidate {
	c := make([]Candidate, n)
	for i := range c {
		c[i] = Candidate{ID: fmt.Sprintf("http://w%d", i)}
	}
	return c
}

func TestRoundRobinRotates(t *testing.T) {
	t.Parallel()
	p, _ := New(RoundRobin, Params{}, nil)
	counts := make([]int, 3)
	for range 300 {
		d, _ := p.Pick(Request{}, ids(3))
		counts[d.Index]++
	}
	for i, n := range counts {
		if n != 100 {
			t.Errorf("worker %d got %d, want 100", i, n)
		}
	}
}

func TestPowerOfTwoPrefersLowerLoad(t *testing.T) {
	t.Parallel()
	p, _ := New(PowerOfTwo, Params{}, NewLockedRand(7))
	cands := []Candidate{{ID: "a", InFlight: 10}, {ID: "b", InFlight: 0}}
	for range 50 {
		if d, _ := p.Pick(Request{}, cands); d.Index != 1 {
			t.Fatalf("picked the loaded worker")
		}
	}
	// The queue part of the signal counts too.
	cands = []Candidate{{ID: "a", InFlight: 1}, {ID: "b", InFlight: 0, Queue: 5}}
	for range 50 {
		if d, _ := p.Pick(Request{}, cands); d.Index != 0 {
			t.Fatalf("ignored the queue signal")
		}
	}
}

func TestLeastLoadedTiesRotate(t *testing.T) {
	t.Parallel()
	p, _ := New(LeastLoaded, Params{}, nil)
	cands := []Candidate{{ID: "a", InFlight: 2}, {ID: "b", InFlight: 1}, {ID: "c", InFlight: 1}}
	seen := map[int]int{}
	for range 10 {
		d, _ := p.Pick(Request{}, cands)
		seen[d.Index]++
	}
	if seen[0] != 0 || seen[1] != 5 || seen[2] != 5 {
		t.Fatalf("picks %v, want the two tied workers 5/5", seen)
	}
}

func TestConsistentHashStableAndMinimalMovement(t *testing.T) {
	t.Parallel()
	p, _ := New(ConsistentHash, Params{}, nil)
	all := ids(5)
	owner := func(cands []Candidate, key string) string {
		d, _ := p.Pick(Request{HashKey: key}, cands)
		return cands[d.Index].ID
	}
	before := map[string]string{}
	perWorker := map[string]int{}
	for i := range 2000 {
		k := fmt.Sprintf("session-%d", i)
		before[k] = owner(all, k)
		perWorker[before[k]]++
		if again := owner(all, k); again != before[k] {
			t.Fatalf("key %s moved without a pool change", k)
		}
	}
	for id, n := range perWorker {
		if n < 200 || n > 700 { // 400 expected; 160 vnodes keep the spread well inside this
			t.Errorf("worker %s owns %d of 2000 keys", id, n)
		}
	}
	// w2 turns unhealthy: only its keys move, and they spread over several
	// survivors (walking the ring), not onto one fallback worker.
	without := append(append([]Candidate{}, all[:2]...), all[3:]...)
	dest := map[string]int{}
	for k, was := range before {
		now := owner(without, k)
		if was != "http://w2" && now != was {
			t.Fatalf("key %s moved from healthy %s to %s", k, was, now)
		}
		if was == "http://w2" {
			dest[now]++
		}
	}
	if len(dest) < 3 {
		t.Errorf("orphaned keys went to %d workers (%v), want them spread", len(dest), dest)
	}
}

func TestCacheAwareKeepsPrefixGroupsAndBalances(t *testing.T) {
	t.Parallel()
	p, _ := New(CacheAware, Params{CacheThreshold: 0.5, BalanceAbsThreshold: 4, BalanceRelThreshold: 1.5, MaxTreeSize: 1 << 20}, nil)
	cands := ids(3)
	groupOwner := map[int]int{}
	for i := range 60 {
		g := i % 3
		text := fmt.Sprintf("system prompt of group %d, long shared context ... question %d", g, i)
		d, _ := p.Pick(Request{Model: "m", Text: text}, cands)
		if i >= 3 {
			if d.Outcome != OutcomeCacheHit {
				t.Fatalf("request %d: outcome %v, want cache hit", i, d.Outcome)
			}
			if d.Index != groupOwner[g] {
				t.Fatalf("group %d moved from %d to %d while balanced", g, groupOwner[g], d.Index)
			}
		} else {
			groupOwner[g] = d.Index
		}
	}
	if len(map[int]bool{groupOwner[0]: true, groupOwner[1]: true, groupOwner[2]: true}) != 3 {
		t.Errorf("cold groups did not spread over idle workers: %v", groupOwner)
	}
	// Group 0's owner is now far busier: the gate fires and sends to the least loaded.
	loaded := append([]Candidate{}, cands...)
	loaded[groupOwner[0]].InFlight = 20
	d, _ := p.Pick(Request{Model: "m", Text: "system prompt of group 0, long shared context ... question x"}, loaded)
	if d.Outcome != OutcomeLoadBalance || d.Index == groupOwner[0] {
		t.Fatalf("imbalanced pick = %+v, want a load-balancing event away from %d", d, groupOwner[0])
	}
	// Another model shares no tree with "m".
	if d, _ := p.Pick(Request{Model: "other", Text: "system prompt of group 0, long shared context"}, cands); d.Outcome != OutcomeCacheMiss {
		t.Errorf("other model outcome %v, want miss", d.Outcome)
	}
}

func TestCacheAwareStrictThreshold(t *testing.T) {
	t.Parallel()
	p, _ := New(CacheAware, Params{CacheThreshold: 0.5, BalanceAbsThreshold: 100, BalanceRelThreshold: 2, MaxTreeSize: 1 << 20}, nil)
	cands := ids(2)
	p.Pick(Request{Text: "abcd"}, cands)
	// "abXY": match 2/4 = 0.5 exactly, not above the threshold → miss.
	if d, _ := p.Pick(Request{Text: "abXY"}, cands); d.Outcome != OutcomeCacheMiss {
		t.Errorf("match rate equal to threshold gave %v, want miss", d.Outcome)
	}
	if d, _ := p.Pick(Request{Text: "abcZ"}, cands); d.Outcome != OutcomeCacheHit {
		t.Errorf("match rate 0.75 gave %v, want hit", d.Outcome)
	}
}

func TestCacheAwareEvictionBoundsBytesAndForgetPrunes(t *testing.T) {
	t.Parallel()
	const limit = 8 << 10
	p := newCacheAware(Params{CacheThreshold: 0.5, BalanceAbsThreshold: 100, BalanceRelThreshold: 2, MaxTreeSize: limit})
	cands := ids(4)
	inserted := 0
	for i := range 200 {
		text := fmt.Sprintf("%03d unique text that does not share much %d", i, i)
		inserted += len(text)
		p.Pick(Request{Model: fmt.Sprint("m", i%2), Text: text}, cands)
		if held := p.HeldBytes(); held > limit {
			t.Fatalf("after pick %d the tree holds %d bytes, cap %d", i, held, limit)
		}
		checkTree(t, p.tree)
	}
	if inserted <= limit {
		t.Fatalf("test did not overfill the tree: %d bytes of text", inserted)
	}
	if held := p.HeldBytes(); held < limit/2 {
		t.Fatalf("eviction emptied the tree too far: %d of %d bytes", held, limit)
	}
	// The most recent text survives eviction.
	p.epoch++
	for _, c := range cands {
		if ten := p.tree.tenants[c.ID]; ten != nil {
			ten.epoch = p.epoch
		}
	}
	if m, _ := p.tree.match("m1", "199 unique text that does not share much 199", p.epoch); m == 0 {
		t.Error("eviction dropped the most recently used text")
	}
	p.Forget("http://w1")
	if _, ok := p.Sizes()["http://w1"]; ok {
		t.Error("Forget left the target in the tree")
	}
	checkTree(t, p.tree)
	// A lowered cap is reached by the periodic pass.
	p.p.MaxTreeSize = limit / 4
	p.Evict()
	if held := p.HeldBytes(); held > limit/4 {
		t.Errorf("Evict left %d bytes, cap %d", held, limit/4)
	}
	checkTree(t, p.tree)
}
