package cmd

import (
	"context"
	"encoding/json"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/pgtest"
)

// pgShared is the PostgreSQL server of this package's tests, started by
// the first test that needs one and stopped by TestMain.
var pgShared pgtest.Shared

// smokeSpec writes ci-smoke.yaml with another router policy: the same
// trial name, engines and traffic, so rows of two policies share one
// comparison context and the later one marks the earlier stale.
func smokeSpec(t *testing.T, policy string) string {
	t.Helper()
	b, err := os.ReadFile("../trials/examples/ci-smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(b), "policy: round_robin", "policy: "+policy, 1)
	path := filepath.Join(t.TempDir(), policy+".yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// staleState is what the stale rule left on a row, by trial policy.
type staleState struct {
	stale  bool
	reason string
	// markedBy is the policy of the row whose finish time is stale_at.
	markedBy string
}

func staleStates(t *testing.T, url string) (map[string]staleState, []string) {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.List(context.Background(), ledger.Filter{IncludeStale: true, IncludeVirtual: true})
	if err != nil {
		t.Fatal(err)
	}
	policy := func(r ledger.Trial) string {
		var rc struct{ Policy string }
		if err := json.Unmarshal(r.RouterConfig, &rc); err != nil {
			t.Fatal(err)
		}
		return rc.Policy
	}
	out := map[string]staleState{}
	var order []string // oldest first
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		s := staleState{stale: r.Stale, reason: r.StaleReason}
		for _, o := range rows {
			if r.StaleAt != nil && o.FinishedAt.Equal(*r.StaleAt) && o.ID != r.ID {
				s.markedBy = policy(o)
			}
		}
		out[policy(r)] = s
		order = append(order, policy(r))
	}
	return out, order
}

// Acceptance 2: two trial runs on one PostgreSQL ledger that finish at
// once — the test holds the writers' advisory lock until both wait on it
// with their rows — leave the stale marks of a serial run in the same
// order. No output names the password.
func TestTrialRunsFinishingTogetherOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgShared.Database(t)
	migrated, err := ledger.Open(ctx, url) // so neither run queues in its open
	if err != nil {
		t.Fatal(err)
	}
	migrated.Close()
	specs := map[string]string{"round_robin": smokeSpec(t, "round_robin"), "power_of_two": smokeSpec(t, "power_of_two")}
	args := func(spec, url string) []string {
		return []string{"trial", "run", spec, "--ledger", url, "--clock", "virtual", "--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag}
	}
	hold, err := pgtest.HoldLock(ctx, url, ledger.PostgresWriterLock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var outputs []string
	for _, spec := range specs {
		wg.Go(func() {
			code, out, errs := run(t, args(spec, url)...)
			mu.Lock()
			defer mu.Unlock()
			outputs = append(outputs, out, errs)
			if code != ExitOK {
				t.Errorf("trial run %s: exit %d\n%s\n%s", spec, code, out, errs)
			}
		})
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = hold.WaitQueued(waitCtx, len(specs))
	cancel()
	if rerr := hold.Release(ctx); err == nil {
		err = rerr
	}
	wg.Wait()
	if err != nil {
		t.Fatalf("forcing the overlap: %v", err)
	}
	together, order := staleStates(t, url)
	if len(order) != 2 {
		t.Fatalf("%d rows, want 2", len(order))
	}
	// The same runs one after the other, in the order the rows committed.
	serialURL := pgShared.Database(t)
	for _, policy := range order {
		if code, out, errs := run(t, args(specs[policy], serialURL)...); code != ExitOK {
			t.Fatalf("serial trial run %s: exit %d\n%s\n%s", policy, code, out, errs)
		}
	}
	serial, _ := staleStates(t, serialURL)
	for policy, want := range serial {
		if got := together[policy]; got != want {
			t.Errorf("%s: together %+v, serially %+v", policy, got, want)
		}
	}
	if first := together[order[0]]; !first.stale || first.markedBy != order[1] || !strings.Contains(first.reason, "router.policy") {
		t.Errorf("the first row to commit (%s): %+v, want marked stale by %s", order[0], first, order[1])
	}
	for _, o := range outputs {
		if strings.Contains(o, pgtest.Password) {
			t.Errorf("output shows the ledger's password:\n%s", o)
		}
	}
}

// Every read command prints the same bytes for the same rows on SQLite
// and on PostgreSQL, and $AUTOINFER_LEDGER stands in for --ledger.
func TestLedgerCommandsSameOnBothDatabases(t *testing.T) {
	lite := ledgerFixture(t)
	url := ledgerFixtureAt(t, pgShared.Database(t))
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"list"}, ExitOK}, {[]string{"list", "-o", "json"}, ExitOK},
		{[]string{"list", "--where", "policy=cache_aware", "--where", "replicas=2", "-o", "csv"}, ExitOK},
		{[]string{"list", "--where", "replicas=two"}, ExitOK}, {[]string{"list", "--bound", "p99_ttft_ms < 100.5"}, ExitOK},
		{[]string{"list", "--bound", "completed >= 199.5", "--status", "ok"}, ExitOK},
		{[]string{"show", "1", "-o", "json"}, ExitOK}, {[]string{"show", "3"}, ExitOK},
		{[]string{"pareto", "-o", "json", "--include-stale"}, ExitOK}, {[]string{"pareto", "--x", "completed", "--y", "output_throughput"}, ExitOK},
		{[]string{"compare", "A", "B", "-o", "json"}, ExitOK}, {[]string{"compare", "1", "2"}, ExitOK},
		{[]string{"export", "--requests", "--include-stale", "-o", "json"}, ExitOK}, {[]string{"export", "--requests", "-o", "csv"}, ExitOK},
		{[]string{"export", "--format", "vllm", "2", "--requests"}, ExitOK},
		{[]string{"show", "99"}, ExitUsage},
	} {
		args := tc.args
		wantOut, wantErr, wantCode := runLedger(t, append(args, "--ledger", lite)...)
		gotOut, gotErr, gotCode := runLedger(t, append(args, "--ledger", url)...)
		if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
			t.Errorf("ledger %s: PostgreSQL differs from SQLite:\nexit %d, want %d\n%s%s\nwant:\n%s%s",
				strings.Join(args, " "), gotCode, wantCode, gotOut, gotErr, wantOut, wantErr)
		}
		if wantCode != tc.code || (tc.code == ExitOK && len(wantOut) == 0) {
			t.Errorf("ledger %s: exit %d, want %d\n%s%s", strings.Join(args, " "), wantCode, tc.code, wantOut, wantErr)
		}
	}
	html := filepath.Join(t.TempDir(), "report.html")
	if out, errs, code := runLedger(t, "report", "--ledger", url, "--html", html); code != ExitOK {
		t.Errorf("ledger report: exit %d\n%s%s", code, out, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil || strings.Contains(string(page), pgtest.Password) || !strings.Contains(string(page), "xxxxx") {
		t.Errorf("the report (%d bytes, %v) names the ledger without its password masked", len(page), err)
	}
	t.Setenv("AUTOINFER_LEDGER", url)
	out, errs, code := runLedger(t, "list")
	if code != ExitOK || !strings.Contains(out, "cache_aware") {
		t.Errorf("ledger list with $AUTOINFER_LEDGER: exit %d\n%s%s", code, out, errs)
	}
	c := newLedgerCmd()
	if def := c.PersistentFlags().Lookup("ledger").DefValue; strings.Contains(def, pgtest.Password) || !strings.Contains(def, "xxxxx") {
		t.Errorf("--ledger's default in help is %q, want the URL with its password masked", def)
	}
}

// ledger push twice copies each row once; pull brings them back, and the
// pulled file exports the same bytes as the original.
func TestLedgerPushPull(t *testing.T) {
	lite := ledgerFixture(t)
	url := pgShared.Database(t)
	var outputs []string
	step := func(want int, wantOut string, args ...string) {
		t.Helper()
		out, errs, code := runLedger(t, args...)
		outputs = append(outputs, out, errs)
		if code != want || !strings.Contains(out+errs, wantOut) {
			t.Errorf("ledger %s: exit %d, want %d with %q\n%s%s", strings.Join(args, " "), code, want, wantOut, out, errs)
		}
	}
	step(ExitOK, "pushed 3 rows (400 request records)", "push", "--ledger", lite, "--to", url)
	step(ExitOK, "pushed 0 rows (0 request records)", "push", "--ledger", lite, "--to", url)
	step(ExitOK, "3 already there", "push", "--ledger", lite, "--to", url)
	pulled := filepath.Join(t.TempDir(), "pulled.db")
	step(ExitOK, `"copied": 3`, "pull", "--from", url, "--ledger", pulled, "-o", "json")
	step(ExitOK, "pulled 0 rows", "pull", "--from", url, "--ledger", pulled)
	step(ExitUsage, "--from / --to", "push", "--ledger", lite)
	step(ExitUsage, "does not exist", "push", "--ledger", filepath.Join(t.TempDir(), "missing.db"), "--to", url)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:1" // no server listens there
	step(ExitInfra, "xxxxx", "push", "--ledger", lite, "--to", u.String())
	for _, o := range outputs {
		if strings.Contains(o, pgtest.Password) {
			t.Errorf("output shows the ledger's password:\n%s", o)
		}
	}
	want, _, _ := runLedger(t, "export", "--requests", "--include-stale", "--ledger", lite)
	got, _, _ := runLedger(t, "export", "--requests", "--include-stale", "--ledger", pulled)
	if got != want || len(want) < 1000 {
		t.Errorf("the pulled ledger exports %d bytes that differ from the original's %d", len(got), len(want))
	}
}
