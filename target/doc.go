// Package target provisions inference workers for a topology and tears them
// down: simulated engines in-process (target/simtarget, the default), static
// URLs (target/static), or local processes such as `vllm serve`
// (target/process).
//
// The package root holds what every target shares: the Topology a trial
// asks for, the Deployment a target hands back (it owns the members that
// serve the workers: their parallel stop, restarts, crash reports), the
// Provisioner contract that connects them, the Kind and Options contract
// through which trial specs name and configure a target without importing
// it, a health-wait helper and the StartupError a target returns when a
// worker never became ready.
package target
