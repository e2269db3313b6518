package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A go test -json stream as go 1.26 writes it: a passing package with a
// subtest, a failing test whose output is printed, a skipped test, and a
// package that fails to build.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"run","Package":"m/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"m/a","Test":"TestOK/sub","Elapsed":0}
{"Action":"pass","Package":"m/a","Test":"TestOK","Elapsed":0.01}
{"Action":"skip","Package":"m/a","Test":"TestSkipped","Elapsed":0}
{"Action":"pass","Package":"m/a","Elapsed":0.5}
{"Action":"start","Package":"m/b"}
{"Action":"output","Package":"m/b","Test":"TestBad","Output":"    b_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"m/b","Test":"TestBad","Elapsed":0.02}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"fail","Package":"m/b","Elapsed":0.3}
{"ImportPath":"m/c","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
{"ImportPath":"m/c","Action":"build-fail"}
{"Action":"start","Package":"m/c"}
{"Action":"output","Package":"m/c","Output":"FAIL\tm/c [build failed]\n"}
{"Action":"fail","Package":"m/c","Elapsed":0,"FailedBuild":"m/c"}
`

func TestTallyCountsAndReports(t *testing.T) {
	var out bytes.Buffer
	c, err := tally(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (counts{TestsPassed: 2, TestsFailed: 1, TestsSkipped: 1, PackagesPassed: 1, PackagesFailed: 2}); c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	for _, want := range []string{"ok  \tm/a\t0.500s", "b_test.go:9: got 1, want 2", "FAIL\tm/b\t0.300s", "c/c.go:3:1: syntax error", "FAIL\tm/c"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "=== RUN   TestOK") {
		t.Errorf("a passing test's output is printed:\n%s", out.String())
	}
}

// The line names what passed, and is never "0 failed" when a stage failed.
func TestLine(t *testing.T) {
	ok := counts{TestsPassed: 1200, PackagesPassed: 64}
	for _, c := range []struct {
		s    stages
		want string
	}{
		{stages{counts: ok, ran: true, lintOK: true, e2eOK: true}, "make test: 1200 passed, 0 failed (64 packages, lint clean, end-to-end trial ok)"},
		{stages{status: 2, counts: counts{TestsPassed: 1190, TestsFailed: 3, PackagesPassed: 62, PackagesFailed: 2}, ran: true, lintOK: true},
			"make test: 1190 passed, 3 failed (2 of 64 packages failed, lint clean, end-to-end trial failed or did not run)"},
		{stages{status: 2, counts: counts{TestsPassed: 10, PackagesPassed: 63, PackagesFailed: 1}, ran: true, lintOK: true},
			"make test: 10 passed, 1 failed (1 of 64 packages failed, lint clean, end-to-end trial failed or did not run)"},
		{stages{status: 2}, "make test: 0 passed, 1 failed (the suite did not run, lint failed or did not run, end-to-end trial failed or did not run)"},
		{stages{status: 2, counts: ok, ran: true, lintOK: true}, "make test: 1200 passed, 1 failed (64 packages, lint clean, end-to-end trial failed or did not run)"},
	} {
		if got := line(c.s); got != c.want {
			t.Errorf("line(%+v)\n got %q\nwant %q", c.s, got, c.want)
		}
	}
}

// run keeps the command's exit status and writes the counts line by line.
func TestRunKeepsTheStatus(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "counts")
	var out, errb bytes.Buffer
	if code := run(path, []string{"sh", "-c", "printf '%s' \"$0\"; exit 3", stream}, &out, &errb); code != 3 {
		t.Errorf("status %d, want the command's 3 (%s)", code, errb.String())
	}
	c, ran, err := readCounts(path)
	if err != nil || !ran || c.TestsFailed != 1 || c.PackagesFailed != 2 {
		t.Errorf("counts %+v, %v, %v", c, ran, err)
	}
	if code := run(path, []string{"sh", "-c", "printf '%s' \"$0\"", stream}, &out, &errb); code != 1 {
		t.Errorf("status %d when the command exits 0 but a test failed, want 1", code)
	}
	if _, ran, _ := readCounts(filepath.Join(dir, "none")); ran {
		t.Error("a missing counts file reads as a run")
	}
	if err := os.WriteFile(path, []byte("bogus=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCounts(path); err == nil {
		t.Error("a malformed counts file is accepted")
	}
}
