//go:build !race

package cmd

// raceDetector reports whether the tests run under the race detector.
const raceDetector = false
