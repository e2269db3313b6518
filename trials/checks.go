package trials

import (
	"math"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Checks bound how far the host that runs a trial may fall behind it: over
// either bound the trial fails as HostOverloaded, since its figures would
// describe this machine rather than the deployment.
type Checks struct {
	// MaxScheduleDelayP99Ms bounds the driver's p99 lateness (send time
	// after due time, open-loop arrivals only), in milliseconds.
	MaxScheduleDelayP99Ms float64 `yaml:"max_schedule_delay_p99_ms" json:"max_schedule_delay_p99_ms"`
	// MaxEngineLagRatio bounds the simulated engines' step lag over their
	// modelled busy time in the measured window (real engines export no
	// lag and are never held to it).
	MaxEngineLagRatio float64 `yaml:"max_engine_lag_ratio" json:"max_engine_lag_ratio"`
}

// defaultChecks are bounds a quiet 2-core machine holds.
func defaultChecks() Checks {
	return Checks{MaxScheduleDelayP99Ms: failure.DefaultScheduleDelayLimitMs, MaxEngineLagRatio: failure.DefaultEngineLagRatioLimit}
}

// Validate checks both bounds; paths are relative to checks:.
func (c Checks) Validate() error {
	var l field.Errors
	for _, b := range []struct {
		key string
		v   float64
	}{{"max_schedule_delay_p99_ms", c.MaxScheduleDelayP99Ms}, {"max_engine_lag_ratio", c.MaxEngineLagRatio}} {
		if math.IsInf(b.v, 0) {
			l.Add(b.key, "must be a finite number > 0, got %g", b.v)
			continue
		}
		l.Check(field.Above(b.key, b.v, 0))
	}
	return l.Err()
}
