package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent; build
// output comes as build-output and build-fail events).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

// counts are what a run found; written to the -o file as key=value lines.
type counts struct {
	TestsPassed, TestsFailed, TestsSkipped int
	PackagesPassed, PackagesFailed         int
}

// tally reads a go test -json stream from r, writes go test's plain report
// to w as it goes (a line per package, the output of failed tests and
// packages, build errors) and returns the counts. Subtests count as tests.
func tally(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	held := map[[2]string][]string{} // (package, test) → output lines until the result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			held[key] = append(held[key], e.Output)
		case "pass", "skip":
			if e.Test != "" {
				if e.Action == "pass" {
					c.TestsPassed++
				} else {
					c.TestsSkipped++
				}
			} else if e.Action == "pass" {
				c.PackagesPassed++
				fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
			delete(held, key)
		case "fail":
			fmt.Fprint(w, strings.Join(held[key], ""))
			delete(held, key)
			if e.Test != "" {
				c.TestsFailed++
				continue
			}
			c.PackagesFailed++
			fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	}
	return c, sc.Err()
}

// run executes the command in args with its stdout read as go test -json,
// writes the counts to path and returns the command's exit status (1 when
// it exited 0 but a test or package failed).
func run(path string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "testsum run: no command after --")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsum run:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsum run:", err)
		return 2
	}
	c, readErr := tally(pipe, stdout)
	status := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(stderr, "testsum run:", err)
			return 2
		}
		status = exit.ExitCode()
	}
	if readErr != nil {
		fmt.Fprintln(stderr, "testsum run: reading go test's output:", readErr)
		status = max(status, 1)
	}
	if status == 0 && (c.TestsFailed > 0 || c.PackagesFailed > 0) {
		status = 1
	}
	if err := os.WriteFile(path, fmt.Appendf(nil, "tests_passed=%d\ntests_failed=%d\ntests_skipped=%d\npackages_passed=%d\npackages_failed=%d\n",
		c.TestsPassed, c.TestsFailed, c.TestsSkipped, c.PackagesPassed, c.PackagesFailed), 0o644); err != nil {
		fmt.Fprintln(stderr, "testsum run:", err)
		return max(status, 1)
	}
	return status
}
