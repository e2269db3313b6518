//go:build !race

package clitest

// raceDetector reports whether this package (and so the test binary that
// imports it) was built with the race detector.
const raceDetector = false
