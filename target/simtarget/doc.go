// Package simtarget is the default target: simulated vLLM engines
// (target/sim) served in-process, one per worker, each on its own listener
// on a free port of 127.0.0.1. Because the listener is bound before the
// worker is handed out, there is no port race and no startup wait.
package simtarget
