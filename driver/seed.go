package driver

import "github.com/autoinfer/autoinfer/driver/workload"

// Phases of a run; each derives its own random sources, so the warm-up
// stream shares no state with the measured one.
const (
	phaseMeasured = workload.PhaseMeasured
	phaseWarmup   = "warmup"
)

// source returns the workload.Source of one phase (workload.PhaseSource:
// the measured phase's is the one workload.LongestRequest builds from).
func source(phase string, seed int64, trialID string) workload.Source {
	return workload.PhaseSource(phase, seed, trialID)
}
