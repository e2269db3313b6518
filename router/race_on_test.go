//go:build race

package router

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back (to expose misuse), so allocation counts are not meaningful.
const raceEnabled = true
