package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// list shows the newest 50 rows by default and says so; --all and --limit
// change the page; json and csv stream the same rows.
func TestLedgerListPages(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for range 60 {
		tr := ledger.Trial{Name: "t", Status: ledger.StatusOK, StartedAt: start, FinishedAt: start,
			EngineConfig: ledger.JSON(`{"model":"m"}`), Topology: ledger.Topology{Replicas: 1}}
		if _, err := l.Record(context.Background(), tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	rows := func(format string, args ...string) (int, string) {
		out, errs, code := runLedger(t, append([]string{"list", "--ledger", path, "-o", format}, args...)...)
		if code != ExitOK {
			t.Fatalf("list %v: exit %d: %s", args, code, errs)
		}
		switch format {
		case "json":
			var v []ledger.Trial
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("list -o json %v: %v\n%s", args, err, out)
			}
			return len(v), errs
		default:
			return strings.Count(out, "\n") - 1, errs // minus the header
		}
	}
	if n, errs := rows("table"); n != 50 || !strings.Contains(errs, "--all") {
		t.Errorf("default page: %d rows, stderr %q; want 50 and a hint naming --all", n, errs)
	}
	if n, _ := rows("table", "--all"); n != 60 {
		t.Errorf("--all: %d rows, want 60", n)
	}
	if n, _ := rows("json", "--limit", "7"); n != 7 {
		t.Errorf("--limit 7 -o json: %d rows, want 7", n)
	}
	if n, _ := rows("json", "--all"); n != 60 {
		t.Errorf("--all -o json: %d rows, want 60", n)
	}
	if n, _ := rows("csv", "--all"); n != 60 {
		t.Errorf("--all -o csv: %d rows, want 60", n)
	}
	if out, _, code := runLedger(t, "list", "--ledger", path, "-o", "json", "--name", "nobody"); code != ExitOK || out != "[]\n" {
		t.Errorf("empty json listing: exit %d, %q; want []", code, out)
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--all", "--limit", "5"}} {
		if _, _, code := runLedger(t, append([]string{"list", "--ledger", path}, bad...)...); code != ExitUsage {
			t.Errorf("list %v: exit %d, want %d", bad, code, ExitUsage)
		}
	}
}
