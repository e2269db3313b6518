package ledger

import (
	"context"
	"testing"
)

// TestVirtualRowsNeverMarkRealRows: a virtual row under another router
// config leaves the real row fresh, and a real row leaves virtual rows
// fresh; a second virtual row under another config marks the first virtual
// one, naming the change.
func testVirtualRowsNeverMarkRealRows(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	realRow, err := l.Record(ctx, trial("real-rr", routerRR), nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := trial("virtual-ca", routerCA)
	v1.Identity = virtualIdentity("fast")
	got, err := l.Record(ctx, v1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.MarkedStale) != 0 {
		t.Fatalf("a virtual row marked %+v (the real row is %d)", got.MarkedStale, realRow.ID)
	}
	v2 := trial("virtual-rr", routerRR)
	v2.Identity = virtualIdentity("fast")
	got2, err := l.Record(ctx, v2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got2.MarkedStale) != 1 || got2.MarkedStale[0].ID != got.ID {
		t.Fatalf("second virtual row marked %+v, want the first virtual row %d only", got2.MarkedStale, got.ID)
	}
	r, err := l.Get(ctx, realRow.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stale || r.Clock != ClockReal {
		t.Errorf("real row: stale %v (%q), clock %q; want fresh, real", r.Stale, r.StaleReason, r.Clock)
	}
	bad := trial("bad-clock", routerRR)
	bad.Clock = "wall"
	if _, err := l.Record(ctx, bad, nil); err == nil {
		t.Error("clock \"wall\" was recorded, want an error naming clock")
	}
}
