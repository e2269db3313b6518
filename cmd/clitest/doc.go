// Package clitest builds the autoinfer binary for tests that run it as a
// child process (process-target engines, an external router, the
// Kubernetes test kubelet's pods).
//
// The binary is built in the test binary's own mode: with the race
// detector when the tests run under -race. A race test run then compiles
// every package once, in one mode (a plain build beside it would compile
// all of autoinfer's dependencies a second time: about 140 s of CPU on a
// cold cache), and the child processes are checked for races too.
package clitest
