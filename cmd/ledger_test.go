package cmd

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg/draw"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// ledgerFixture writes three trials: A (round_robin, stale after B), B
// (cache_aware, faster TTFT by 40 ms) and a failed one. They are separate
// runs, not one sweep, so B marks A stale.
func ledgerFixture(t *testing.T) string {
	t.Helper()
	return ledgerFixtureAt(t, filepath.Join(t.TempDir(), "ledger.db"))
}

// ledgerFixtureAt writes ledgerFixture's rows to the ledger at location.
func ledgerFixtureAt(t *testing.T, path string) string {
	t.Helper()
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	mk := func(name, policy string, ttft, tput float64) (ledger.Trial, []ledger.Request) {
		tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: start, FinishedAt: start.Add(time.Minute),
			EngineConfig: ledger.JSON(`{"model":"sim-llama-3-8b"}`), Topology: ledger.Topology{Replicas: 2},
			RouterConfig: ledger.JSON(`{"policy":"` + policy + `"}`), Workload: ledger.JSON(`{"request_rate":8,"num_prompts":200}`),
			Identity: ledger.Identity{TargetKind: "sim", Hardware: "fast", Model: "sim-llama-3-8b", WorkloadHash: "w1"}}
		tr.P99TTFTMs, tr.OutputThroughput, tr.Completed = ttft+20, tput, 200
		reqs := make([]ledger.Request, 200)
		for i := range reqs {
			v := ttft + float64(i%20)
			reqs[i] = ledger.Request{Index: i, TTFTMs: v, TPOTMs: 5 + float64(i%7), E2ELMs: v + 100, ITLs: ledger.Floats{5, 6},
				InputTokens: 100, OutputTokens: 3, Status: ledger.RequestOK}
		}
		return tr, reqs
	}
	for _, p := range []struct {
		name, policy string
		ttft, tput   float64
	}{{"A", "round_robin", 100, 900}, {"B", "cache_aware", 60, 1000}} {
		tr, reqs := mk(p.name, p.policy, p.ttft, p.tput)
		if _, err := l.Record(context.Background(), tr, reqs); err != nil {
			t.Fatal(err)
		}
	}
	tr, _ := mk("F", "cache_aware", 10, 5000)
	tr.Status, tr.Failure = ledger.StatusFailed, failure.RouterPoolExhausted{ErrorType: "queue_full", Count: 3}
	if _, err := l.Record(context.Background(), tr, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func runLedger(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"ledger"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestLedgerListShowExport(t *testing.T) {
	t.Parallel()
	path := ledgerFixture(t)
	out, errs, code := runLedger(t, "list", "--ledger", path)
	if code != 0 || !strings.Contains(out, "round_robin") || !strings.Contains(out, "RouterPoolExhausted") {
		t.Fatalf("list: exit %d, %s%s", code, out, errs)
	}
	out, _, _ = runLedger(t, "list", "--ledger", path, "-o", "json", "--where", "policy=cache_aware", "--status", "ok")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0]["name"] != "B" {
		t.Errorf("list json with filters: %v, %s", err, out)
	}
	out, _, _ = runLedger(t, "list", "--ledger", path, "-o", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 4 || !strings.Contains(strings.Join(recs[0], ","), "p99_ttft_ms") {
		t.Errorf("list csv: %v, %d records", err, len(recs))
	}

	out, _, code = runLedger(t, "show", "1", "--ledger", path)
	if code != 0 || !strings.Contains(out, "router.policy: round_robin→cache_aware") || !strings.Contains(out, "engine_hash") {
		t.Errorf("show 1: exit %d\n%s", code, out)
	}

	out, _, code = runLedger(t, "export", "2", "--ledger", path, "--format", "vllm", "--requests")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("export vllm: exit %d, %v\n%s", code, err, out)
	}
	for _, key := range []string{"date", "model_id", "num_prompts", "request_rate", "duration", "completed", "p99_ttft_ms",
		"median_tpot_ms", "output_throughput", "ttfts", "itls", "input_lens"} {
		if _, ok := res[key]; !ok {
			t.Errorf("vllm export lacks %q", key)
		}
	}
	if res["model_id"] != "sim-llama-3-8b" || res["request_rate"] != 8.0 || res["ttfts"].([]any)[0] != 0.06 {
		t.Errorf("vllm export values: model %v, rate %v, first ttft %v (want seconds)", res["model_id"], res["request_rate"], res["ttfts"].([]any)[0])
	}
	out, _, _ = runLedger(t, "export", "--ledger", path, "-o", "csv", "--requests", "--include-stale")
	recs, err = csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 401 || recs[0][0] != "trial_id" {
		t.Errorf("export requests csv: %v, %d records", err, len(recs))
	}
}

func TestLedgerParetoAndPlot(t *testing.T) {
	t.Parallel()
	path := ledgerFixture(t)
	plotFile := filepath.Join(t.TempDir(), "front.png")
	out, errs, code := runLedger(t, "pareto", "--ledger", path, "--x", "p99_ttft_ms", "--y", "output_throughput", "--plot", plotFile, "-o", "json")
	if code != 0 {
		t.Fatalf("pareto: exit %d: %s", code, errs)
	}
	var res struct {
		Front []ledger.Point `json:"front"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Front) != 1 || res.Front[0].Name != "B" {
		t.Errorf("front: %v %s (want only B: A is stale, F failed)", err, out)
	}
	f, err := os.Open(plotFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 100 {
		t.Errorf("plot is not a valid PNG: %v", err)
	}
	out, _, _ = runLedger(t, "pareto", "--ledger", path, "--include-stale", "--x", "p99_ttft_ms", "--y", "output_throughput")
	if strings.Contains(out, "\nA ") || !strings.Contains(out, "B") {
		t.Errorf("with stale rows A is still dominated by B:\n%s", out)
	}
}

func TestLedgerCompare(t *testing.T) {
	path := ledgerFixture(t)
	out, errs, code := runLedger(t, "compare", "A", "B", "--ledger", path, "-o", "json")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	var res struct {
		Intervals []ledger.Interval `json:"intervals"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Intervals) != 4 {
		t.Fatalf("compare json: %v\n%s", err, out)
	}
	for _, iv := range res.Intervals {
		isTTFT := strings.Contains(iv.Metric, "ttft")
		if isTTFT && (iv.Diff != -40 || !iv.Significant || iv.Better != "B") {
			t.Errorf("%s: %+v, want B better by 40 ms, significant", iv.Metric, iv)
		}
		if !isTTFT && (iv.Diff != 0 || iv.Significant) {
			t.Errorf("%s: %+v, want no difference", iv.Metric, iv)
		}
	}
	out, _, _ = runLedger(t, "compare", "1", "2", "--ledger", path)
	if !strings.Contains(out, "p99_ttft_ms") || !strings.Contains(out, "yes") {
		t.Errorf("compare table:\n%s", out)
	}
	// Sides are labelled by the trials' names, not only the ids typed.
	if !strings.Contains(out, "A: A (trial 1, 200 requests)") || !strings.Contains(out, "B: B (trial 2, 200 requests)") {
		t.Errorf("compare sides not labelled by name:\n%s", out)
	}
}

// docs/ledger.md: the plot labels every point and draws stale points
// hollow, on the front too.
func TestParetoPlotLabelsPointsAndDrawsStaleHollow(t *testing.T) {
	front := ledger.Front{Points: []ledger.Point{
		{ID: 1, Name: "sw/variant=2p2d", X: 1, Y: 9, OnFront: true},
		{ID: 2, Name: "sw/variant=1p3d", X: 2, Y: 5, Stale: true},
		{ID: 3, Name: "solo", X: 3, Y: 1},
		{ID: 4, Name: "sw/variant=c4", X: 0.5, Y: 2, OnFront: true, Stale: true},
	}}
	want := map[int64]struct {
		label  string
		hollow bool
	}{1: {"1 variant=2p2d", false}, 2: {"2 variant=1p3d", true}, 3: {"3 solo", false}, 4: {"4 variant=c4", true}}
	seen := 0
	for _, s := range paretoSeries(front) {
		_, hollow := s.shape.(draw.RingGlyph)
		for i, xy := range s.points {
			for _, p := range front.Points {
				if p.X != xy.X || p.Y != xy.Y {
					continue
				}
				seen++
				if w := want[p.ID]; s.labels[i] != w.label || hollow != w.hollow {
					t.Errorf("row %d: label %q hollow %v, want %q hollow %v", p.ID, s.labels[i], hollow, w.label, w.hollow)
				}
			}
		}
	}
	if seen != len(front.Points) {
		t.Errorf("%d of %d points drawn", seen, len(front.Points))
	}
	svg := filepath.Join(t.TempDir(), "front.svg")
	if err := ledgerPlot(front, svg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(b), w.label) {
			t.Errorf("the SVG lacks the label %q", w.label)
		}
	}
}

func TestLedgerBadInputExitsTwo(t *testing.T) {
	path := ledgerFixture(t)
	missing := filepath.Join(t.TempDir(), "nope.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"list", "--ledger", missing}, "--ledger"},
		{[]string{"list", "--ledger", path, "-o", "yaml"}, "--output"},
		{[]string{"list", "--ledger", path, "--where", "colour=red"}, "colour"},
		{[]string{"list", "--ledger", path, "--where", "policy"}, "KEY=VALUE"},
		{[]string{"list", "--ledger", path, "--status", "great"}, "--status"},
		{[]string{"show", "x", "--ledger", path}, "trial id"},
		{[]string{"show", "99", "--ledger", path}, "99"},
		{[]string{"pareto", "--ledger", path, "--x", "p99_tft_ms"}, "p99_tft_ms"},
		{[]string{"pareto", "--ledger", path, "--plot", "front.gif"}, "--plot"},
		{[]string{"compare", "A", "nobody", "--ledger", path}, "nobody"},
		{[]string{"compare", "A", "B", "--ledger", path, "--confidence", "2"}, "--confidence"},
		{[]string{"export", "--ledger", path, "--format", "vllm"}, "exactly one"},
		{[]string{"export", "--ledger", path, "--format", "parquet"}, "--format"},
		{[]string{"export", "--ledger", path, "-o", "table"}, "--output"},
	}
	for _, c := range cases {
		_, errs, code := runLedger(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %q", c.args, code, errs, ExitUsage, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read command created the missing ledger")
	}
	_, errs, _ := runLedger(t, "pareto", "--ledger", path, "--x", "p99_tft_ms")
	if !strings.Contains(errs, "p99_ttft_ms") {
		t.Errorf("unknown metric error does not list valid metrics: %s", errs)
	}
}

// --bound restricts the candidates to rows meeting a metric condition, in
// the assertion syntax; a bad bound is bad input.
func TestLedgerParetoBound(t *testing.T) {
	path := ledgerFixture(t)
	front := func(args ...string) []ledger.Point {
		t.Helper()
		out, errs, code := runLedger(t, append([]string{"pareto", "--ledger", path, "-o", "json", "--include-stale"}, args...)...)
		if code != 0 {
			t.Fatalf("pareto %v: exit %d: %s", args, code, errs)
		}
		var res struct {
			Front []ledger.Point `json:"front"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res.Front
	}
	// A: p99 TTFT 120, 900 tok/s; B: 80, 1000 tok/s.
	if got := front("--bound", "output_throughput < 950"); len(got) != 1 || got[0].Name != "A" {
		t.Errorf("under output_throughput < 950: %+v, want only A", got)
	}
	if got := front("--bound", "p99_ttft_ms < 50"); len(got) != 0 {
		t.Errorf("under p99_ttft_ms < 50: %+v, want nothing", got)
	}
	_, errs, code := runLedger(t, "pareto", "--ledger", path, "--bound", "p99_ttft_ms ~ 5")
	if code != ExitUsage || !strings.Contains(errs, "--bound[0]") {
		t.Errorf("bad bound: exit %d, %s", code, errs)
	}
}
