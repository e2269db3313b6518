package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// stages is what `make test` ran: the exit status of the whole, the counts
// file of the suite (absent when it did not run) and the markers the lint
// and end-to-end stages leave when they pass.
type stages struct {
	status             int
	lintOK, e2eOK, ran bool
	counts             counts
}

// readCounts reads a counts file; ok is false when there is none.
func readCounts(path string) (counts, bool, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return counts{}, false, nil
	}
	if err != nil {
		return counts{}, false, err
	}
	defer f.Close()
	var c counts
	fields := map[string]*int{"tests_passed": &c.TestsPassed, "tests_failed": &c.TestsFailed, "tests_skipped": &c.TestsSkipped,
		"packages_passed": &c.PackagesPassed, "packages_failed": &c.PackagesFailed}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		p, known := fields[k]
		n, err := strconv.Atoi(v)
		if !known || err != nil {
			return counts{}, false, fmt.Errorf("%s: unexpected line %q", path, sc.Text())
		}
		*p = n
	}
	return c, true, sc.Err()
}

// line is the summary `make test` ends with. Failed counts every failed
// test, every package that failed without a failing test (a build error,
// a timeout) and every failed stage, so it is never 0 when the status is
// not.
func line(s stages) string {
	c := s.counts
	failed := c.TestsFailed
	var parts []string
	switch {
	case !s.ran:
		parts = append(parts, "the suite did not run")
	case c.PackagesFailed > 0:
		parts = append(parts, fmt.Sprintf("%d of %d packages failed", c.PackagesFailed, c.PackagesPassed+c.PackagesFailed))
		if c.TestsFailed == 0 {
			failed += c.PackagesFailed
		}
	default:
		parts = append(parts, fmt.Sprintf("%d packages", c.PackagesPassed))
	}
	if s.lintOK {
		parts = append(parts, "lint clean")
	} else {
		parts = append(parts, "lint failed or did not run")
	}
	if s.e2eOK {
		parts = append(parts, "end-to-end trial ok")
	} else {
		parts = append(parts, "end-to-end trial failed or did not run")
	}
	if s.status != 0 && failed == 0 {
		failed = 1 // a stage failed (lint, setup or the end-to-end trial)
	}
	return fmt.Sprintf("make test: %d passed, %d failed (%s)", c.TestsPassed, failed, strings.Join(parts, ", "))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
