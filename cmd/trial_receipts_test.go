package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// A real-time trial's requests carry the embedded router's route receipts
// in the ledger (joined by the request ids the driver sends; the workload
// names none, so the runner's own), each naming the chosen worker among scored candidates
// with the policy's predicted tokens (a real router sees no engine, so no
// held tokens: the misroute basis is the prediction), and precise_prefix
// predicted what the servers reported as cached_tokens.
func TestTrialRunRecordsRouteReceipts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	spec := filepath.Join(dir, "precise.yaml")
	writeFile(t, spec, precisePrefixSpec)
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag); code != ExitOK {
		t.Fatalf("trial run: exit %d\n%s\n%s", code, out, errs)
	}
	l, err := ledger.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	realID, err := strconv.ParseInt(realRowID(t, db, "precise"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := l.List(context.Background(), ledger.Filter{Name: "precise", IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.ID != realID {
			t.Fatalf("row %d is not the real row %d", row.ID, realID)
		}
		reqs, err := l.Requests(context.Background(), row.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != 24 {
			t.Fatalf("row %d: %d requests, want 24", row.ID, len(reqs))
		}
		for _, q := range reqs {
			var rc struct {
				Policy     string `json:"policy"`
				Worker     string `json:"worker"`
				Candidates []struct {
					ID        string             `json:"id"`
					Scores    map[string]float64 `json:"scores"`
					Predicted *int               `json:"predicted_tokens"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal(q.Receipt, &rc); err != nil {
				t.Fatalf("row %d request %d: receipt %q: %v", row.ID, q.Index, q.Receipt, err)
			}
			chosen := false
			for _, c := range rc.Candidates {
				chosen = chosen || c.ID == rc.Worker
				if _, ok := c.Scores["matched_blocks"]; !ok || c.Predicted == nil {
					t.Fatalf("row %d request %d: candidate %+v has no score or prediction", row.ID, q.Index, c)
				}
			}
			if rc.Policy != "precise_prefix" || len(rc.Candidates) != 2 || !chosen {
				t.Fatalf("row %d request %d: receipt %s: want precise_prefix choosing one of 2 candidates", row.ID, q.Index, q.Receipt)
			}
		}
		f, err := ledger.RouteFiguresOf(reqs)
		if err != nil {
			t.Fatal(err)
		}
		// How many predictions were exact depends on the host here: the
		// router's subscriber applies a batch of events on its own
		// goroutine, racing the next request's decision (it saw 24 of 24
		// on an idle host, under 90 % under a loaded suite). Exactness
		// itself is held on the virtual clock, where events arrive at a
		// modelled time (adapter/virtual TestPreciseReceiptClockParity).
		if f.Basis != ledger.BasisPredicted || f.Exact == nil || *f.Exact == 0 {
			t.Errorf("basis %q, exact predictions %v: want basis predicted and some exact", f.Basis, fmtShare(f.Exact))
		} else {
			t.Logf("%.0f %% of precise_prefix's predictions were exact", 100**f.Exact)
		}
	}
}

// fmtShare prints a share that may be absent.
func fmtShare(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}
