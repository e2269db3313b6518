// Package process is the target that runs each worker as a local child
// process from a command template, e.g.
//
//	vllm serve {model} --host {host} --port {port} {engine_args}
//
// Each worker gets a free port, its own process group (so the server's
// children die with it), its output captured to a log file, and a health
// wait bounded by the startup timeout. Stopping sends SIGTERM to the group,
// then SIGKILL after the grace period.
//
// The package needs a Unix-like system (process groups and signals).
package process
