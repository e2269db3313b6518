// Package simtest starts simulated vLLM engines for tests: real HTTP servers
// on 127.0.0.1 that stop when the test ends, and workers a test can kill and
// restart on the same port.
package simtest
