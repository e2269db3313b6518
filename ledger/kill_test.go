package ledger

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const writerEnv = "AUTOINFER_LEDGER_TEST_WRITER"

const (
	killTrials   = 1000
	killRequests = 200 // per trial: most of the child's time is spent inside a transaction
	killAfter    = 20  // commits before the kill
)

// TestKilledWriterLeavesNoPartialRow is acceptance 3. The test binary
// re-runs itself as a child that records 1,000 trials and prints each
// committed id; after some commits the parent sends SIGKILL, then checks
// integrity and that every row that exists is complete.
func TestKilledWriterLeavesNoPartialRow(t *testing.T) {
	if path := os.Getenv(writerEnv); path != "" {
		writeTrials(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "killed.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKilledWriterLeavesNoPartialRow$")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read commit reports until enough rows are durable, then kill: the
	// child is then almost surely inside its next transaction.
	lines := bufio.NewScanner(out)
	committed := 0
	for committed < killAfter && lines.Scan() {
		var id int
		if _, err := fmt.Sscanf(lines.Text(), "committed %d", &id); err == nil {
			committed = id
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // the kill is the expected exit
	if committed < killAfter {
		t.Fatalf("child reported only %d commits before exiting", committed)
	}

	l, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var integrity string
	if err := l.db.Get(&integrity, "PRAGMA integrity_check"); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	rows := count(t, l, "SELECT count(*) FROM trials")
	if rows < committed || rows >= killTrials {
		t.Errorf("%d rows after the kill: want at least the %d reported commits and fewer than %d", rows, committed, killTrials)
	}
	partial := count(t, l, `SELECT count(*) FROM trials t WHERE t.status <> 'ok' OR t.completed <> ?
		OR (SELECT count(*) FROM requests r WHERE r.trial_id = t.id) <> ?`, killRequests, killRequests)
	if partial != 0 {
		t.Errorf("%d partial rows", partial)
	}
	orphans := count(t, l, "SELECT count(*) FROM requests WHERE trial_id NOT IN (SELECT id FROM trials)")
	if orphans != 0 {
		t.Errorf("%d request records without a trial", orphans)
	}
	t.Logf("killed after %d reported commits; %d complete rows, integrity ok", committed, rows)
}

// writeTrials is the child: record trials until killed.
func writeTrials(t *testing.T, path string) {
	ctx := context.Background()
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	reqs := requests(killRequests, func(i int) float64 { return float64(i) })
	for i := range killTrials {
		tr := trial("kill-"+strconv.Itoa(i), routerRR)
		tr.Completed = killRequests
		rec, err := l.Record(ctx, tr, reqs)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("committed %d\n", rec.ID)
	}
}
