package ledger

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger/pgtest"
)

// testConcurrentWritersLoseNoRow records 20 trials at once through 20
// ledger handles (20 connection pools, as 20 machines would), each with
// its own router config in one comparison context. No row or request may
// be lost, and the stale marks must be a serial run's: in commit (id)
// order every row is marked by the next one, and only the last is fresh.
// On PostgreSQL the test holds the writers' advisory lock until all 20
// wait on it, so their transactions certainly overlap.
func testConcurrentWritersLoseNoRow(t *testing.T, be backend) {
	const writers, perTrial = 20, 50
	ctx := t.Context()
	_, loc := be.open(t)
	handles := make([]*Ledger, writers)
	for i := range handles {
		l, err := Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		handles[i] = l
	}
	var hold *pgtest.Hold
	if IsPostgres(loc) {
		var err error
		if hold, err = pgtest.HoldLock(ctx, loc, PostgresWriterLock); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	recs := make([]Recorded, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, l := range handles {
		wg.Go(func() {
			tr := trial(fmt.Sprintf("w%02d", i), fmt.Sprintf(`{"policy":"cache_aware","cache_threshold":0.%02d}`, i))
			tr.StartedAt, tr.FinishedAt = base, base.Add(time.Duration(i+1)*time.Second)
			<-start
			recs[i], errs[i] = l.Record(ctx, tr, requests(perTrial, func(j int) float64 { return float64(i*1000 + j) }))
		})
	}
	close(start)
	if hold != nil {
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := hold.WaitQueued(waitCtx, writers)
		cancel()
		if rerr := hold.Release(ctx); err == nil {
			err = rerr
		}
		if err != nil {
			wg.Wait()
			t.Fatalf("forcing the overlap: %v", err)
		}
	}
	wg.Wait()
	marked := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		marked += len(recs[i].MarkedStale)
	}
	l := handles[0]
	if n := count(t, l, "SELECT count(*) FROM requests"); n != writers*perTrial {
		t.Errorf("%d request records, want %d", n, writers*perTrial)
	}
	rows, err := l.List(ctx, Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != writers {
		t.Fatalf("%d rows, want %d", len(rows), writers)
	}
	if marked != writers-1 {
		t.Errorf("the writers report %d marks, want %d", marked, writers-1)
	}
	// List is newest first: rows[k] is the one after rows[k+1].
	for k := 1; k < len(rows); k++ {
		older, next := rows[k], rows[k-1]
		if !older.Stale || older.StaleAt == nil || !older.StaleAt.Equal(next.FinishedAt) ||
			!strings.Contains(older.StaleReason, "cache_threshold") {
			t.Errorf("row %d (%s): stale %v at %v (%q), want marked by the next row %d (%s) at %v",
				older.ID, older.Name, older.Stale, older.StaleAt, older.StaleReason, next.ID, next.Name, next.FinishedAt)
		}
	}
	if rows[0].Stale {
		t.Errorf("the last row %d is stale: %q", rows[0].ID, rows[0].StaleReason)
	}
}
