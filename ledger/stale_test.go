package ledger

import (
	"context"
	"testing"
)

// testStaleMarking is acceptance 2: A (round_robin), then B (same engine,
// cache_aware) makes A stale naming the policy change; C identical to B
// makes nothing new stale.
func testStaleMarking(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	a, err := l.Record(ctx, trial("A", routerRR), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.MarkedStale) != 0 {
		t.Fatalf("first row marked %v", a.MarkedStale)
	}
	otherEngine := trial("other-engine", routerRR)
	otherEngine.EngineConfig = JSON(`{"model":"sim-llama-3-8b","max_num_seqs":128}`)
	other, err := l.Record(ctx, otherEngine, nil)
	if err != nil {
		t.Fatal(err)
	}

	b, err := l.Record(ctx, trial("B", routerCA), nil)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "router.cache_threshold: (unset)→0.3; router.policy: round_robin→cache_aware"
	if len(b.MarkedStale) != 1 || b.MarkedStale[0].ID != a.ID || b.MarkedStale[0].Reason != reason {
		t.Fatalf("B marked %+v, want row %d with %q", b.MarkedStale, a.ID, reason)
	}
	gotA, err := l.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !gotA.Stale || gotA.StaleReason != reason || gotA.StaleAt == nil || !gotA.StaleAt.Equal(trial("B", routerCA).FinishedAt) {
		t.Errorf("A after B: stale %v, reason %q, at %v", gotA.Stale, gotA.StaleReason, gotA.StaleAt)
	}
	if gotOther, _ := l.Get(ctx, other.ID); gotOther.Stale {
		t.Errorf("a row of another engine config went stale: %q", gotOther.StaleReason)
	}

	before := count(t, l, "SELECT count(*) FROM trials WHERE stale = TRUE")
	c, err := l.Record(ctx, trial("C", routerCA), nil)
	if err != nil {
		t.Fatal(err)
	}
	after := count(t, l, "SELECT count(*) FROM trials WHERE stale = TRUE")
	if len(c.MarkedStale) != 0 || after != before {
		t.Errorf("C identical to B marked %v (stale rows %d → %d)", c.MarkedStale, before, after)
	}
	if gotB, _ := l.Get(ctx, b.ID); gotB.Stale {
		t.Errorf("B went stale after identical C: %q", gotB.StaleReason)
	}
	// Stale rows stay queryable but leave default listings.
	all, _ := l.List(ctx, Filter{IncludeStale: true})
	fresh, _ := l.List(ctx, Filter{})
	if len(all) != 4 || len(fresh) != 3 {
		t.Errorf("listed %d rows with stale, %d without; want 4 and 3", len(all), len(fresh))
	}
}

// TestSweepRowsDoNotMarkEachOther: the rows of one sweep are a deliberate
// side-by-side comparison and stay fresh; a later row outside the sweep
// marks them as usual.
func testSweepRowsDoNotMarkEachOther(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	var sweep []int64
	for _, router := range []string{routerRR, routerCA} {
		tr := trial("sweep", router)
		tr.SweepID = "s1"
		rec, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.MarkedStale) != 0 {
			t.Fatalf("a row of sweep s1 marked %+v", rec.MarkedStale)
		}
		sweep = append(sweep, rec.ID)
	}
	later := trial("later", `{"policy":"power_of_two"}`)
	rec, err := l.Record(ctx, later, nil)
	if err != nil {
		t.Fatal(err)
	}
	var marked []int64
	for _, m := range rec.MarkedStale {
		marked = append(marked, m.ID)
	}
	if len(marked) != 2 || marked[0] != sweep[0] || marked[1] != sweep[1] {
		t.Errorf("a row outside the sweep marked %v, want both sweep rows %v", marked, sweep)
	}
}
