package cmd

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// parallelTests is how many tests run at once unless -test.parallel is
// given. Most of this package's tests wait on Poisson arrivals in real
// time, not on the CPU, and those that run trials lift the host-overload
// bounds, so more of them than GOMAXPROCS can share the machine: the
// longest (the browser test) no longer queues behind the others. Under
// the race detector every request costs several times the CPU and the
// tests are CPU-bound, so there GOMAXPROCS (go test's default) run at once.
const parallelTests = 8

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && !raceDetector {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := pgShared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping postgres:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
