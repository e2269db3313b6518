package report

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// fixture records a small sweep in a real ledger: three ok trials (two
// policies, two rates) with requests, a failed one, and a stale row from an
// earlier run.
func fixture(t *testing.T) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l := openLedger(t)
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	rec := func(name, sweep, policy string, rate, ttft float64, status ledger.Status) {
		tr := ledger.Trial{Name: name, SweepID: sweep, Status: status, StartedAt: start, FinishedAt: start.Add(time.Minute),
			EngineConfig: ledger.JSON(`{"model":"sim-llama-3-8b","max_num_seqs":64}`), Topology: ledger.Topology{Replicas: 2},
			RouterConfig: ledger.JSON(`{"policy":"` + policy + `","port":4000,"worker_urls":["http://127.0.0.1:1"]}`),
			Workload:     ledger.JSON(`{"kind":"random","arrival":{"kind":"poisson","request_rate":` + jsonNum(rate) + `}}`),
			Identity: ledger.Identity{TargetKind: "sim", Hardware: "fast", Model: "sim-llama-3-8b",
				WorkloadHash: "rate-" + jsonNum(rate)}}
		tr.Duration, tr.Completed, tr.P99TTFTMs, tr.OutputThroughput = 2, 40, ttft*1.5, 1000/ttft
		var reqs []ledger.Request
		if status == ledger.StatusOK {
			for i := range 40 {
				reqs = append(reqs, ledger.Request{Index: i, TTFTMs: ttft + float64(i), TPOTMs: 5, E2ELMs: ttft + 100,
					OutputTokens: 8, Status: ledger.RequestOK})
			}
		} else {
			tr.Failure = failure.RouterPoolExhausted{ErrorType: "queue_full", Count: 3}
		}
		if _, err := l.Record(ctx, tr, reqs); err != nil {
			t.Fatal(err)
		}
	}
	rec("old", "", "least_loaded", 10, 80, ledger.StatusOK) // stale once the sweep's rows arrive
	rec("s/router.policy=rr,workload.arrival.request_rate=10", "sw", "rr", 10, 50, ledger.StatusOK)
	rec("s/router.policy=rr,workload.arrival.request_rate=20", "sw", "rr", 20, 120, ledger.StatusOK)
	rec("s/router.policy=ca,workload.arrival.request_rate=10", "sw", "ca", 10, 40, ledger.StatusOK)
	rec("s/router.policy=ca,workload.arrival.request_rate=20", "sw", "ca", 20, 40, ledger.StatusFailed)
	return l
}

// openLedger opens an empty ledger in the test's directory, closed when
// the test ends.
func openLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func jsonNum(v float64) string { b, _ := json.Marshal(v); return string(b) }

func TestBuild(t *testing.T) {
	l := fixture(t)
	ctx := context.Background()
	r, err := Build(ctx, l, Selection{}, Options{Ledger: "x.db"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 5 || r.Rows[0].ID != 1 || !r.Rows[0].Stale || r.Rows[4].Status != "failed" || r.Rows[4].Failure == "" {
		t.Fatalf("rows: %+v", r.Rows)
	}
	if len(r.CDFs) != 4 || len(r.Pairs) != 6 { // ok rows only: 4 CDFs, 4·3/2 pairs
		t.Errorf("%d CDFs and %d pairs, want 4 and 6", len(r.CDFs), len(r.Pairs))
	}
	id := r.Rows[1].Identity
	if id.Policy != "rr" || id.Rate != 10 || id.Topology != "2 replicas" || id.Target != "sim" || id.Hardware != "fast" {
		t.Errorf("identity: %+v", id)
	}
	for _, s := range id.Router {
		if s.Key == "port" || s.Key == "worker_urls" {
			t.Errorf("router identity holds the address key %s", s.Key)
		}
	}
	// A pair is ledger.Compare's answer, intervals and all.
	cmp, err := l.Compare(ctx, "2", "3", ledger.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Pairs {
		if p.A == 2 && p.B == 3 && (len(p.Intervals) != 4 || p.Intervals[1] != cmp.Intervals[1]) {
			t.Errorf("pair 2,3: %+v, ledger compare %+v", p.Intervals, cmp.Intervals)
		}
	}
	if r.Title != "autoinfer report: the whole ledger" || r.Curves.SLO != nil {
		t.Errorf("title %q, SLO %v", r.Title, r.Curves.SLO)
	}

	sw, err := Build(ctx, l, Selection{SweepID: "sw"}, Options{MaxPairs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Title != "autoinfer report: s" || len(sw.Rows) != 4 || len(sw.Pairs) != 0 || !strings.Contains(sw.PairsNote, "--compare") {
		t.Errorf("sweep: title %q, %d rows, %d pairs, note %q", sw.Title, len(sw.Rows), len(sw.Pairs), sw.PairsNote)
	}
	if len(sw.Curves.Series) != 2 || len(sw.Curves.Series[1].Points) != 1 { // the failed ca row is no point
		t.Errorf("series: %+v", sw.Curves.Series)
	}

	lim, err := Build(ctx, l, Selection{Limit: 2}, Options{})
	if err != nil || len(lim.Rows) != 2 || lim.Rows[0].ID != 4 || len(lim.Notes) != 1 {
		t.Errorf("limit 2: %v, %+v", err, lim)
	}
}

func TestBuildRejects(t *testing.T) {
	l := fixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		sel  Selection
		opt  Options
		want string
		is   error
	}{
		{Selection{IDs: []int64{99}}, Options{}, "trial 99", ledger.ErrNotFound},
		{Selection{SweepID: "nope"}, Options{}, "sweep nope", ledger.ErrNotFound},
		{Selection{IDs: []int64{1, 2}}, Options{Pairs: [][2]int64{{1, 5}}}, "compare[0]: trial 5", ErrNotInReport},
		{Selection{SweepID: "a", Name: "b", Limit: -1}, Options{Attainment: 2, CDFPoints: 1},
			"at most one\nlimit: must be >= 0, got -1", nil},
	} {
		_, err := Build(ctx, l, c.sel, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%+v %+v: %v, want %q", c.sel, c.opt, err, c.want)
		}
	}
	err := Options{Attainment: 2, CDFPoints: 1, Pairs: [][2]int64{{3, 3}}}.Validate()
	for _, want := range []string{"attainment", "cdf-points", "compare[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want a problem naming %s", err, want)
		}
	}
}

// The page is one file: styles, scripts and data inline, nothing that loads
// from elsewhere, and data that no trial name can break out of.
func TestRenderSelfContained(t *testing.T) {
	l := fixture(t)
	r, err := Build(context.Background(), l, Selection{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Rows[0].Name = `</script><script>alert(1)</script>`
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(strings.ToLower(page), "</script"); n != 4 {
		t.Errorf("%d </script tags, want the 4 of the page's own scripts", n)
	}
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*\s(src|href)=`).FindString(page); m != "" {
		t.Errorf("the page loads from elsewhere: %s", m)
	}
	if strings.Contains(page, "sourceMappingURL") {
		t.Error("a source map comment survived")
	}
	if !strings.Contains(page, `content="default-src 'none'`) {
		t.Error("no content security policy forbidding network loads")
	}
	start := strings.Index(page, `type="application/json">`) + len(`type="application/json">`)
	end := start + strings.Index(page[start:], "</script>")
	var back Report
	if err := json.Unmarshal([]byte(page[start:end]), &back); err != nil || back.Rows[0].Name != r.Rows[0].Name {
		t.Errorf("embedded data does not round-trip: %v", err)
	}
}

// The vendored files are the ones assets/vendor/README.md names.
func TestVendoredFilesMatchReadme(t *testing.T) {
	f, err := os.Open("assets/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (\S+\.js) \|.*\| ([0-9a-f]{64}) \|$`)
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		b, err := assets.ReadFile("assets/vendor/" + m[1])
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m[2] {
			t.Errorf("%s: sha256 %x, README says %s", m[1], sum, m[2])
		}
	}
	if n != 2 {
		t.Errorf("README lists %d vendored files, want 2", n)
	}
}
