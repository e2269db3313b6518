// Package simtest starts simulated vLLM engines for tests: real HTTP servers
// on 127.0.0.1 that stop when the test ends, workers a test can kill and
// restart on the same port (or, with StartStoppableOn, on the same address
// of an in-memory network inside a testing/synctest bubble), and engines on
// its own in-memory Network (StartPipe).
package simtest
