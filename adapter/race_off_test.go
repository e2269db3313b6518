//go:build !race

package adapter

// raceDetector reports whether the tests run under the race detector.
const raceDetector = false
