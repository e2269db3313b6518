package ledger

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A trial whose records come from an iterator, in whatever order they
// completed and across several insert batches, reads back as the same
// trial written from a slice; an error from the iterator leaves nothing
// of it in the ledger.
func testRecordSeqStreamsRecords(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	reqs := requests(2*requestBatch+7, func(i int) float64 { return 20 + float64(i%97) })
	for i := range reqs {
		if i%11 == 0 {
			reqs[i].Status = requestShed503
		}
	}
	// Completion order: each block of 3 backwards.
	completed := slices.Clone(reqs)
	for i := 0; i+2 < len(completed); i += 3 {
		completed[i], completed[i+2] = completed[i+2], completed[i]
	}
	var shed ShedCount
	for _, r := range completed {
		shed.Add(r)
	}
	viaSlice, err := l.Record(ctx, trial("slice", routerRR), reqs)
	if err != nil {
		t.Fatal(err)
	}
	streamed := trial("streamed", routerRR)
	streamed.ShedRate = shed.Rate()
	viaSeq, err := l.RecordSeq(ctx, streamed, RequestSeq(completed))
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustTrialRequests(t, l, viaSlice.ID), mustTrialRequests(t, l, viaSeq.ID)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("streamed records differ from the slice's (-slice +streamed):\n%s", diff)
	}
	if len(b) != len(reqs) {
		t.Errorf("%d records read back, want %d", len(b), len(reqs))
	}
	ta, tb := mustGet(t, l, viaSlice.ID), mustGet(t, l, viaSeq.ID)
	if ta.ShedRate == nil || tb.ShedRate == nil || *ta.ShedRate != *tb.ShedRate {
		t.Errorf("shed rates %v (slice) and %v (streamed ShedCount), want equal", ta.ShedRate, tb.ShedRate)
	}

	boom := errors.New("spool unreadable")
	failing := func(yield func(Request, error) bool) {
		for i, r := range reqs {
			if i == requestBatch+3 { // after a batch went in
				yield(Request{}, boom)
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
	before := count(t, l, "SELECT count(*) FROM requests")
	if _, err := l.RecordSeq(ctx, trial("broken", routerRR), failing); !errors.Is(err, boom) {
		t.Fatalf("recording with a failing iterator: %v, want %v", err, boom)
	}
	if n := count(t, l, "SELECT count(*) FROM trials WHERE name = 'broken'"); n != 0 {
		t.Errorf("%d rows of the failed write in the ledger, want 0", n)
	}
	if after := count(t, l, "SELECT count(*) FROM requests"); after != before {
		t.Errorf("%d request records after the failed write, want the %d before it", after, before)
	}
}

func mustTrialRequests(t *testing.T, l *Ledger, id int64) []Request {
	t.Helper()
	rs, err := l.Requests(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func mustGet(t *testing.T, l *Ledger, id int64) Trial {
	t.Helper()
	tr, err := l.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
