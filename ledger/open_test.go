package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// foreignDB is someone else's SQLite file: one table, no ledger version.
func foreignDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sqlx.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

// Readers and writers both refuse a database that is not a ledger, and
// neither changes a byte of it.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := foreignDB(t)
	before := fileSum(t, path)
	if _, err := OpenReadOnly(ctx, path); !errors.Is(err, ErrNotLedger) {
		t.Errorf("OpenReadOnly on a foreign database: %v, want ErrNotLedger", err)
	}
	if _, err := Open(ctx, path); !errors.Is(err, ErrNotLedger) {
		t.Errorf("Open on a foreign database: %v, want ErrNotLedger", err)
	}
	if fileSum(t, path) != before {
		t.Error("the foreign database changed")
	}
}

// An empty file is a new ledger to a writer but not a ledger to a reader,
// and the reader leaves it empty.
func TestReadOnlyOpenOfEmptyFileWritesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(context.Background(), path); !errors.Is(err, ErrNotLedger) {
		t.Errorf("OpenReadOnly on an empty file: %v, want ErrNotLedger", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("empty file after a read: %v, %v", st, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("a read left files behind: %v", entries)
	}
}

func TestOpenRefusesNonSQLiteFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 400), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context, string) (*Ledger, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		if _, err := open(context.Background(), path); !errors.Is(err, ErrNotLedger) {
			t.Errorf("%s on a text file: %v, want ErrNotLedger", name, err)
		}
	}
}

// A read-only open reads rows and cannot write.
func testReadOnlyOpenReadsAndCannotWrite(t *testing.T, be backend) {
	t.Parallel()
	ctx := context.Background()
	l, path := be.open(t)
	if _, err := l.Record(ctx, trial("a", routerRR), nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rows, err := ro.List(ctx, Filter{})
	if err != nil || len(rows) != 1 || rows[0].Name != "a" {
		t.Fatalf("reading through a read-only open: %v, %v", rows, err)
	}
	if _, err := ro.Record(ctx, trial("b", routerRR), nil); err == nil {
		t.Error("recording through a read-only open succeeded")
	}
}

// A writer notices a damaged file before writing into it.
func TestOpenDetectsCorruption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, path := openTemp(t)
	for i := range 50 {
		if _, err := l.Record(ctx, trial(strings.Repeat("x", 200)+string(rune('a'+i%26)), routerRR), requests(20, func(int) float64 { return 1 })); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the middle pages (keep the 100-byte header and page 1, so
	// SQLite still recognises the file) with garbage.
	for i := 8192; i < len(b)-4096 && i < 8192+16384; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Open of a damaged ledger: %v, want a corruption error", err)
	}
}

// A reader of a ledger written by an older autoinfer is told to migrate;
// Migrate upgrades it and the reader then opens it.
func TestReadOnlyOpenOfOlderSchemaAsksForMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sqlx.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, sqliteDialect{}, 1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenReadOnly(ctx, path); err == nil || !strings.Contains(err.Error(), "ledger migrate") {
		t.Fatalf("OpenReadOnly of a version-1 ledger: %v, want a hint to migrate", err)
	}
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("after migrating: %v", err)
	}
	ro.Close()
}

// --where on a JSON field works when some rows have no router (issue 11:
// `--where policy=…` failed with "malformed JSON" once a single-replica row
// existed).
func testWhereOnLedgerWithRouterlessRows(t *testing.T, be backend) {
	t.Parallel()
	ctx := context.Background()
	l, _ := be.open(t)
	solo := trial("solo", "")
	solo.RouterConfig, solo.Topology = nil, Topology{Replicas: 1}
	for _, tr := range []Trial{solo, trial("rr", routerRR), trial("ca", routerCA)} {
		if _, err := l.Record(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]string{"policy": "ca", "model": ""} {
		val := map[string]string{"policy": "cache_aware", "model": "sim-llama-3-8b"}[key]
		rows, err := l.List(ctx, Filter{Where: map[string]string{key: val}, IncludeStale: true})
		if err != nil {
			t.Fatalf("--where %s=%s: %v", key, val, err)
		}
		if want != "" && (len(rows) != 1 || rows[0].Name != want) {
			t.Errorf("--where %s=%s: %d rows, want only %q", key, val, len(rows), want)
		}
		if want == "" && len(rows) != 3 {
			t.Errorf("--where %s=%s: %d rows, want all 3", key, val, len(rows))
		}
	}
}
