// Package testsum is `make test`'s reporter. `testsum run -o FILE -- go
// test -json …` runs the suite, prints what plain go test prints (a line
// per package, the output of the tests that failed) and writes the counts
// to FILE; `testsum line …` then prints the one line `make test` ends with,
// which CI reads: "make test: N passed, M failed (P packages, lint clean,
// end-to-end trial ok)", and exits with the run's status.
package main
