package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/cmd"
)

// cacheHitTolerance is how far, in percentage points, the demo's cache hit
// rates may be from the README's. cache_aware's follow from its routing
// (83.8–84.8 % in every run measured); round_robin's depend on how many
// requests overlap and which evicts first, which the host's load moves:
// 48.8–50.3 % over three runs at load average 8–13 on the 2-core machine,
// 43.1 % at 24. Ten points still tell the README's figures from any other
// demo's (the fast profile's printed 33.5 % / 55.7 %).
const cacheHitTolerance = 10

// TestReadmeShowsWhatTheDemoPrints runs the demo's spec as `make demo` does
// and compares its output with the README's sample: the sample's columns
// and rows, each row's trial, status and request counts exactly, its cache
// hit rates within cacheHitTolerance, and the comparison's verdict.
// Throughputs and latencies are only checked for their form: a loaded host
// moves them (28.7 req/s on a quiet machine, 22.5 at load average 24). The
// host bounds are lifted: this test checks the printed figures, and the
// demo's refusal on a busy host has its own test in cmd.
func TestReadmeShowsWhatTheDemoPrints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo (about 25 s)")
	}
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sample := sampleBlock(t, string(readme))
	var out, errb bytes.Buffer
	code := cmd.Main([]string{"trial", "run", "trials/examples/quickstart.yaml", "--ledger", filepath.Join(t.TempDir(), "demo.db"),
		"--max-schedule-delay", "1h", "--max-engine-lag-ratio", "1e6"}, &out, &errb)
	if code != cmd.ExitOK {
		t.Fatalf("demo exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
	demo := out.String()

	wantHead, wantRows := table(t, sample)
	gotHead, gotRows := table(t, demo)
	if len(gotRows) != len(wantRows) {
		t.Fatalf("demo prints %d rows, README %d:\n%s", len(gotRows), len(wantRows), demo)
	}
	for i, want := range wantRows {
		got := gotRows[i]
		for j, col := range wantHead {
			if col == "…" {
				continue
			}
			k := indexOf(gotHead, col)
			if k < 0 || k >= len(got) || j >= len(want) {
				t.Fatalf("README column %q is not in the demo's table %q", col, gotHead)
			}
			g, w := got[k], want[j]
			switch col {
			case "ROW", "TRIAL", "STATUS", "OK/FAIL":
				if g != w {
					t.Errorf("row %d %s: demo %q, README %q", i+1, col, g, w)
				}
			case "REQ/S", "OUT TOK/S":
				number(t, g)
			case "CACHE HIT":
				if !within(t, strings.TrimSuffix(g, "%"), strings.TrimSuffix(w, "%"), cacheHitTolerance) {
					t.Errorf("row %d %s: demo %s, README %s (beyond %d points)", i+1, col, g, w, cacheHitTolerance)
				}
			default: // latencies: only their form
				if !regexp.MustCompile(`^[0-9.]+/[0-9.]+$`).MatchString(g) {
					t.Errorf("row %d %s: demo %q is not p50/p99", i+1, col, g)
				}
			}
		}
	}
	for _, line := range strings.Split(sample, "\n") {
		switch {
		case strings.HasPrefix(line, "A = "):
			if !strings.Contains(demo, line) {
				t.Errorf("the demo does not print the README's comparison heading %q", line)
			}
		case verdictLine.MatchString(line):
			checkVerdict(t, demo, line)
		}
	}
}

// verdictLine is a comparison line of the sample: a metric, A's and B's
// figures, and a verdict (after the interval, or "better: X").
var verdictLine = regexp.MustCompile(`^  ([a-z0-9_]+) +A `)

// checkVerdict fails unless the demo gives the sample line's metric the
// sample's verdict. TTFT is the exception: this test runs the demo under
// the race detector beside the suite's other packages, and TTFT's verdicts
// move with that load (measured in the full suite: p50 [-14.13,
// +14.79], no significant difference; p99 +77.45 [+24.13, +120.97],
// round_robin better; on a quiet host both favour cache_aware). The TPOT
// and hit-rate verdicts held in every run; TTFT lines are checked for
// their presence only.
func checkVerdict(t *testing.T, demo, line string) {
	t.Helper()
	metric := verdictLine.FindStringSubmatch(line)[1]
	verdict := verdictOf(line)
	for _, l := range strings.Split(demo, "\n") {
		if m := verdictLine.FindStringSubmatch(l); m == nil || m[1] != metric {
			continue
		}
		got := verdictOf(l)
		if got == verdict || strings.Contains(metric, "_ttft_") {
			return
		}
		t.Errorf("the demo's %s verdict %q is not the README's %q:\n%s", metric, got, verdict, demo)
		return
	}
	t.Errorf("the demo prints no %s comparison:\n%s", metric, demo)
}

// verdictOf is a comparison line's verdict.
func verdictOf(line string) string {
	if i := strings.LastIndex(line, "]"); i >= 0 {
		return strings.TrimSpace(line[i+1:])
	}
	if i := strings.LastIndex(line, "better:"); i >= 0 {
		return strings.TrimSpace(line[i:])
	}
	return ""
}

// sampleBlock is the README's fenced block that holds the demo's table.
func sampleBlock(t *testing.T, readme string) string {
	t.Helper()
	for i, block := range strings.Split(readme, "```") {
		if i%2 == 1 && strings.Contains(block, "ROW  TRIAL") {
			return block
		}
	}
	t.Fatal("README has no sample of the demo's table")
	return ""
}

// table splits the trial table of out (header and numbered rows) into
// cells; the table's columns are separated by two spaces or more.
func table(t *testing.T, out string) (head []string, rows [][]string) {
	t.Helper()
	sep := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " ")
		switch {
		case strings.HasPrefix(line, "ROW  TRIAL"):
			head = sep.Split(line, -1)
		case head != nil && regexp.MustCompile(`^[0-9]+ `).MatchString(line):
			rows = append(rows, sep.Split(line, -1))
		case head != nil && line == "":
			return head, rows
		}
	}
	if head == nil {
		t.Fatalf("no trial table in:\n%s", out)
	}
	return head, rows
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

func within(t *testing.T, got, want string, tol float64) bool {
	t.Helper()
	d := number(t, got) - number(t, want)
	return d <= tol && d >= -tol
}
