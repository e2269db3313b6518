package ledger

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// testMigratesFromEveryEarlierVersion builds a file at each version the
// binary has shipped (0 = empty file), puts a row in it when the version
// has the trials table, and opens it: it must reach the current version
// with the row intact and writable.
func testMigratesFromEveryEarlierVersion(t *testing.T, be backend) {
	ctx := context.Background()
	for v := 0; v < SchemaVersion(); v++ {
		path := be.empty(t)
		db, d := rawOpen(t, path)
		if err := migrateTo(ctx, db, d, v); err != nil {
			t.Fatalf("building version %d: %v", v, err)
		}
		if v >= 1 {
			// Version 1's columns only: this is how an old binary wrote rows.
			if _, err := db.Exec(`INSERT INTO trials (name, status, started_at, finished_at, engine_hash, engine_config, p99_ttft_ms)
				VALUES ('old', 'ok', '2026-01-01 00:00:00+00:00', '2026-01-01 00:01:00+00:00', 'e1', '{"model":"m"}', 12.5)`); err != nil {
				t.Fatalf("seeding version %d: %v", v, err)
			}
		}
		db.Close()

		l, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("opening version %d: %v", v, err)
		}
		if got, err := l.d.version(ctx, l.db); err != nil || got != SchemaVersion() {
			t.Errorf("from version %d: schema version %d (%v), want %d", v, got, err, SchemaVersion())
		}
		if v >= 1 {
			old, err := l.Get(ctx, 1)
			if err != nil || old.Name != "old" || old.P99TTFTMs != 12.5 {
				t.Errorf("from version %d: old row %+v, %v", v, old, err)
			}
		}
		if _, err := l.Record(ctx, trial("new", routerRR), requests(3, func(int) float64 { return 1 })); err != nil {
			t.Errorf("from version %d: recording after migration: %v", v, err)
		}
		l.Close()
	}
}

func testOpenRefusesNewerSchema(t *testing.T, be backend) {
	l, path := be.open(t)
	ctx := context.Background()
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.d.setVersion(ctx, tx, 99); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, err = Open(ctx, path)
	if err == nil {
		t.Fatal("opened a ledger from the future")
	}
	for _, want := range []string{"99", "newer", "upgrade autoinfer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !strings.Contains(err.Error(), "("+strconv.Itoa(SchemaVersion())+")") {
		t.Errorf("error %q does not name this binary's version %d", err, SchemaVersion())
	}
}

func TestOpenReadOnlyDoesNotCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	if _, err := OpenReadOnly(context.Background(), path); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("OpenReadOnly(missing) = %v", err)
	}
	if _, err := OpenReadOnly(context.Background(), path); err == nil {
		t.Fatal("second OpenReadOnly found a file the first one created")
	}
}

func TestPragmasOnEveryConnection(t *testing.T) {
	l, _ := openTemp(t)
	l.db.SetMaxOpenConns(3)
	ctx := context.Background()
	// Hold three connections at once so the pool has to open fresh ones.
	for range 3 {
		c, err := l.db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var fk, sync, busy int
		var mode string
		for _, q := range []struct {
			pragma string
			dst    any
		}{{"foreign_keys", &fk}, {"synchronous", &sync}, {"busy_timeout", &busy}, {"journal_mode", &mode}} {
			if err := c.GetContext(ctx, q.dst, "PRAGMA "+q.pragma); err != nil {
				t.Fatalf("PRAGMA %s: %v", q.pragma, err)
			}
		}
		if fk != 1 || sync != 1 || busy != 10000 || mode != "wal" {
			t.Errorf("connection pragmas: foreign_keys %d, synchronous %d, busy_timeout %d, journal_mode %s", fk, sync, busy, mode)
		}
	}
}

// A row written before the measured-window figures keeps its cumulative
// hit rate under its own name and has no window figures: the cumulative
// rate counted warm-up, gate and earlier trials, so it is not shown as the
// trial's own.
func TestMigrationKeepsCumulativeHitRateApart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sqlx.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	// The version right before the window_figures step, wherever it sits.
	before := slices.IndexFunc(migrations(), func(m migration) bool { return m.name == "window_figures" })
	if before < 1 {
		t.Fatal("no window_figures migration")
	}
	if err := migrateTo(ctx, db, sqliteDialect{}, before); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO trials (name, status, started_at, finished_at, engine_hash, engine_config, prefix_cache_hit_rate)
		VALUES ('old', 'ok', '2026-01-01 00:00:00+00:00', '2026-01-01 00:01:00+00:00', 'e1', '{"model":"m"}', 0.569)`); err != nil {
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
	if old.PrefixCacheHitRate != nil || old.Preemptions != nil || old.Engines != nil {
		t.Errorf("old row has window figures %+v, want none", old.Window)
	}
	var cumulative float64
	if err := l.db.Get(&cumulative, "SELECT cumulative_prefix_cache_hit_rate FROM trials WHERE id = 1"); err != nil || cumulative != 0.569 {
		t.Errorf("cumulative_prefix_cache_hit_rate = %v (%v), want 0.569", cumulative, err)
	}
	if v, ok := old.Value("prefix_cache_hit_rate"); ok {
		t.Errorf("metric lookup found %v on a row without the figure", v)
	}
}
