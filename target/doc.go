// Package target provisions inference workers for a topology and tears them
// down: simulated engines in-process (target/simtarget, the default), static
// URLs (target/static), or local processes such as `vllm serve`
// (target/process).
//
// The package root holds what every target shares: the Topology a trial
// asks for, the Deployment a target hands back, the Provisioner contract
// that connects them, a health-wait helper and the StartupError a target
// returns when a worker never became ready.
package target
