package ledger

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
)

// Issue 11, item 2: rows are compared, and marked stale, only within one
// comparison context. Another profile, target kind, request stream or
// topology never marks; the same context under another policy does.
func testStaleOnlyWithinTheComparisonContext(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	fast, err := l.Record(ctx, trial("fast-rr", routerRR), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []func(*Trial){
		func(t *Trial) { t.Identity = simIdentity("h100-llama3-8b") },
		func(t *Trial) {
			t.Identity = Identity{TargetKind: "static", Hardware: "8xH100-SXM", Model: "sim-llama-3-8b", WorkloadHash: "w1"}
		},
		func(t *Trial) { t.WorkloadHash = "w2" },
		func(t *Trial) { t.Replicas = 4 },
		func(t *Trial) { t.Identity = Identity{} }, // unknown identity
	} {
		tr := trial("other", routerCA)
		other(&tr)
		rec, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.MarkedStale) != 0 {
			t.Errorf("%+v marked %+v", tr.Identity, rec.MarkedStale)
		}
	}
	same, err := l.Record(ctx, trial("fast-ca", routerCA), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(same.MarkedStale) != 1 || same.MarkedStale[0].ID != fast.ID {
		t.Errorf("same context under another policy marked %+v, want row %d", same.MarkedStale, fast.ID)
	}
}

// A v3 ledger (before trial identity) migrates to v4: its rows read back
// with an empty identity, and a new row of the same engine and another
// policy does not mark them, since what they ran on is unknown.
func TestMigratesFromV3(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	db, err := sqlx.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, sqliteDialect{}, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO trials (name, status, started_at, finished_at, engine_hash, router_hash, replicas,
		engine_config, router_config, p99_ttft_ms, run_id)
		VALUES ('v3', 'ok', '2026-01-01 00:00:00+00:00', '2026-01-01 00:01:00+00:00', ?, 'r-old', 2, ?, ?, 12.5, 'run-1')`,
		hash([]byte(`{"enable_prefix_caching":true,"max_num_seqs":64,"model":"sim-llama-3-8b"}`)), engineA, routerRR); err != nil {
		t.Fatal(err)
	}
	db.Close()

	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	old, err := l.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Name != "v3" || old.P99TTFTMs != 12.5 || old.RunID != "run-1" || old.TargetKind != "" || old.Hardware != "" {
		t.Errorf("v3 row after migration: %+v", old)
	}
	rec, err := l.Record(ctx, trial("new", routerCA), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.MarkedStale) != 0 {
		t.Errorf("a v4 row marked the v3 row of unknown identity: %+v", rec.MarkedStale)
	}
	rows, err := l.List(ctx, Filter{Where: map[string]string{"hardware": "fast"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Name != "new" {
		t.Errorf("--where hardware=fast: %+v", rows)
	}
}
