package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(mainArgs(os.Args[1:], os.Stdout, os.Stderr)) }

func mainArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: testsum run -o FILE -- CMD… | testsum line -status N -counts FILE -lint MARKER -e2e MARKER")
		return 2
	}
	fs := flag.NewFlagSet("testsum "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "run":
		out := fs.String("o", "", "write the counts to this file")
		if err := fs.Parse(args[1:]); err != nil || *out == "" {
			fmt.Fprintln(stderr, "testsum run: -o FILE is required")
			return 2
		}
		return run(*out, fs.Args(), stdout, stderr)
	case "line":
		status := fs.Int("status", 0, "the exit status of make test's stages")
		countsPath := fs.String("counts", "", "the suite's counts file (testsum run -o)")
		lint := fs.String("lint", "", "the marker the lint stage leaves when it passes")
		e2e := fs.String("e2e", "", "the marker the end-to-end stage leaves when it passes")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		c, ran, err := readCounts(*countsPath)
		if err != nil {
			fmt.Fprintln(stderr, "testsum line:", err)
			return max(*status, 1)
		}
		fmt.Fprintln(stdout, line(stages{status: *status, counts: c, ran: ran, lintOK: exists(*lint), e2eOK: exists(*e2e)}))
		return *status
	}
	fmt.Fprintf(stderr, "testsum: unknown command %q (run or line)\n", args[0])
	return 2
}
