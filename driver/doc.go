// Package driver generates seeded, byte-reproducible request streams, sends
// them on an arrival schedule and measures them exactly as vllm bench serve
// does (TTFT, ITL, TPOT, E2EL, throughputs, goodput).
//
// Generate is a pure function of the Config's workload, seed and trial id:
// the same inputs give the same bodies, headers and intended send offsets in
// any process, and Stream.Hash says so in one string. Run sends a warm-up
// stream (derived separately, never sharing a prompt prefix with the
// measured one), waits for it to finish, then sends the measured stream from
// one scheduler goroutine that sleeps on a single timer until the next
// request is due, and returns a Summary with vllm bench serve's result keys
// plus schedule delay, achieved rate and an error breakdown. Before the
// warm-up a ready check must succeed (a 4xx ends the run: NotReadyError).
// Simulate runs the same on a virtual clock against a System. Both clocks
// share one request life cycle (phase.go: send, finish, stop, abandon,
// measure); only how time passes and how a request travels differ (wall.go,
// simulate.go), and TestClockParity holds them to the same records.
// Sub-packages: workload (prompt items, tokenizers), arrival (send
// offsets), metrics (summary), sweep (saturation sweeps and their knee).
// docs/metrics.md and docs/workloads.md are the reference.
package driver
