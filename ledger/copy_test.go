package ledger

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Copy reads and writes trialRow, so every column of the trials table must
// be one of its fields, or a copy would drop it.
func TestCopyCarriesEveryColumn(t *testing.T) {
	l, _ := openTemp(t)
	var cols []string
	if err := l.db.Select(&cols, "SELECT name FROM pragma_table_info('trials')"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(cols)
	got := slices.Sorted(slices.Values(trialColumns()))
	if diff := cmp.Diff(cols, got); diff != "" {
		t.Errorf("trials columns (-schema +trialRow):\n%s", diff)
	}
}

// copySource is a SQLite ledger with every kind of row: a full failed
// row, ok rows under two routers (the later marks the earlier stale), a
// virtual prediction and the real row that confirms it, and a row as an
// older autoinfer wrote it, with nanoseconds and a cumulative hit rate.
func copySource(t *testing.T) *Ledger {
	t.Helper()
	ctx := t.Context()
	l, _ := openTemp(t)
	full := fullTrial()
	reqs := requests(1500, func(i int) float64 { return 10 + float64(i) })
	reqs[7].Status, reqs[7].ErrorType, reqs[7].Error = "error", "pool_exhausted", "503 pool exhausted"
	record := func(tr Trial, reqs []Request) Recorded {
		t.Helper()
		rec, err := l.Record(ctx, tr, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	record(full, reqs)
	a := trial("a", routerRR)
	record(a, requests(3, func(i int) float64 { return 1 }))
	b := trial("b", routerCA)
	b.FinishedAt = b.FinishedAt.Add(time.Minute)
	record(b, nil)
	v := trial("cand", routerRR)
	v.Identity = virtualIdentity("fast")
	pv := record(v, nil)
	m := trial("cand", `{"policy":"power_of_two"}`)
	m.Identity = simIdentity("other")
	m.PredictedBy = &pv.ID
	record(m, nil)
	if _, err := l.db.Exec(`INSERT INTO trials (name, status, started_at, finished_at, engine_hash, engine_config, p99_ttft_ms, cumulative_prefix_cache_hit_rate)
		VALUES ('old', 'ok', '2026-01-01 00:00:00.123456789+00:00', '2026-01-01 00:01:00.5+00:00', 'e1', '{"model":"m"}', 12.5, 0.569)`); err != nil {
		t.Fatal(err)
	}
	return l
}

// allRows reads every row and its requests, oldest first, with the
// columns Trial does not show.
func allRows(t *testing.T, l *Ledger) ([]trialRow, map[int64][]Request) {
	t.Helper()
	var rows []trialRow
	if err := l.db.Select(&rows, selectTrials()+" ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	reqs := map[int64][]Request{}
	for i, r := range rows {
		tr, err := r.decode()
		if err != nil {
			t.Fatal(err)
		}
		rows[i].Trial = tr
		if reqs[r.ID], err = l.Requests(t.Context(), r.ID); err != nil {
			t.Fatal(err)
		}
	}
	return rows, reqs
}

// Acceptance 3: ledger push twice copies each row once, and pull
// round-trips every column.
func TestPushTwicePullRoundTrips(t *testing.T) {
	ctx := t.Context()
	src := copySource(t)
	team, _ := openPostgresTemp(t)
	want, wantReqs := allRows(t, src)
	first, err := Copy(ctx, src, team, CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Copy(ctx, src, team, CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Copied != len(want) || first.Present != 0 || first.Requests != 1503 || second.Copied != 0 || second.Present != len(want) {
		t.Errorf("push: first %+v, second %+v; want %d rows and 1503 requests copied once", first, second, len(want))
	}
	pulled, _ := openTemp(t)
	if _, err := Copy(ctx, team, pulled, CopyOptions{KeepIDs: true}); err != nil {
		t.Fatal(err)
	}
	teamRows, teamReqs := allRows(t, team)
	gotRows, gotReqs := allRows(t, pulled)
	opt := cmp.Comparer(func(a, b JSON) bool { return string(a) == string(b) })
	if diff := cmp.Diff(teamRows, gotRows, opt); diff != "" {
		t.Errorf("pull (-team +pulled):\n%s", diff)
	}
	if diff := cmp.Diff(teamReqs, gotReqs); diff != "" {
		t.Errorf("pulled requests (-team +pulled):\n%s", diff)
	}
	// The team ledger was empty, so it numbered the rows as the source
	// did; only the old row's nanoseconds are gone.
	want[len(want)-1].StartedAt = want[len(want)-1].StartedAt.Truncate(time.Microsecond)
	if diff := cmp.Diff(want, gotRows, opt); diff != "" {
		t.Errorf("push then pull (-source +pulled):\n%s", diff)
	}
	if diff := cmp.Diff(wantReqs, gotReqs); diff != "" {
		t.Errorf("requests after push then pull (-source +pulled):\n%s", diff)
	}
	// Pulling into the source finds every row there, nanoseconds or not.
	back, err := Copy(ctx, team, src, CopyOptions{KeepIDs: true})
	if err != nil || back.Copied != 0 || back.Present != len(want) {
		t.Errorf("pull into the source: %+v, %v; want every row present", back, err)
	}
}

// Copied rows and the destination's are marked as if all had been
// recorded in the order they finished.
func TestCopyMarksStaleInFinishOrder(t *testing.T) {
	ctx := t.Context()
	at := func(tr Trial, minute int) Trial {
		tr.FinishedAt = tr.StartedAt.Add(time.Duration(minute) * time.Minute)
		return tr
	}
	team, _ := openPostgresTemp(t)
	if _, err := team.Record(ctx, at(trial("b", routerCA), 2), nil); err != nil {
		t.Fatal(err)
	}
	local, _ := openTemp(t)
	for _, tr := range []Trial{at(trial("a", routerRR), 1), at(trial("c", `{"policy":"power_of_two"}`), 3)} {
		if _, err := local.Record(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Copy(ctx, local, team, CopyOptions{})
	if err != nil || res.Copied != 2 || res.MarkedStale != 2 {
		t.Fatalf("copy: %+v, %v; want 2 rows copied, 2 marks", res, err)
	}
	rows, err := team.List(ctx, Filter{IncludeStale: true})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Trial{}
	for _, r := range rows {
		by[r.Name] = r
	}
	for _, c := range []struct{ name, markedBy string }{{"a", "b"}, {"b", "c"}, {"c", ""}} {
		r := by[c.name]
		if c.markedBy == "" {
			if r.Stale {
				t.Errorf("%s is stale (%q), want fresh", c.name, r.StaleReason)
			}
			continue
		}
		if !r.Stale || r.StaleAt == nil || !r.StaleAt.Equal(by[c.markedBy].FinishedAt) {
			t.Errorf("%s: stale %v at %v, want marked by %s at %v", c.name, r.Stale, r.StaleAt, c.markedBy, by[c.markedBy].FinishedAt)
		}
	}
}
