package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/autoinfer/autoinfer/ledger"
)

// Read commands on a file that is not a ledger exit 2 naming it, and leave
// the file byte for byte as it was (issue: `ledger list` wrote autoinfer's
// schema into unrelated SQLite files).
func TestLedgerReadCommandsRefuseForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.db")
	db, err := sqlx.Open("sqlite", "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{foreign, empty} {
		before, _ := os.ReadFile(path)
		for _, args := range [][]string{{"list"}, {"pareto"}, {"export", "--name", "x"}} {
			_, errs, code := runLedger(t, append(args, "--ledger", path)...)
			if code != ExitUsage || !strings.Contains(errs, "not an autoinfer ledger") {
				t.Errorf("%v on %s: exit %d, stderr %q; want %d and 'not an autoinfer ledger'", args, filepath.Base(path), code, errs, ExitUsage)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s changed after read commands", filepath.Base(path))
		}
	}
	// A writer refuses the foreign file as well.
	if _, errs, code := runLedger(t, "migrate", "--ledger", foreign); code != ExitUsage || !strings.Contains(errs, "not an autoinfer ledger") {
		t.Errorf("migrate on a foreign file: exit %d, %q", code, errs)
	}
}

// `ledger migrate` brings an existing ledger to the current schema and says so.
func TestLedgerMigrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	out, errs, code := runLedger(t, "migrate", "--ledger", path)
	if code != ExitOK || !strings.Contains(out, "schema version") {
		t.Fatalf("migrate: exit %d, out %q, err %q", code, out, errs)
	}
	if _, _, code := runLedger(t, "migrate", "--ledger", filepath.Join(t.TempDir(), "none.db")); code != ExitUsage {
		t.Errorf("migrate of a missing file: exit %d, want %d", code, ExitUsage)
	}
}
