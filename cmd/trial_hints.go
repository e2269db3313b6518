package cmd

import (
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/failure"
)

// overloadHint says what to do about a trial refused as HostOverloaded: the
// refusal is right (the figures would describe this machine), but a
// newcomer on a busy laptop needs the next step, not only the verdict.
func overloadHint(rs []trialResult) string {
	for _, r := range rs {
		var h failure.HostOverloaded
		if r.Failure == nil || !errors.As(r.Failure, &h) {
			continue
		}
		relax := "--max-schedule-delay 250ms (the spec's checks.max_schedule_delay_p99_ms)"
		cause := "the driver sent its requests late"
		if h.Figure == failure.FigureEngineLagRatio {
			relax = "--max-engine-lag-ratio 1 (the spec's checks.max_engine_lag_ratio), or a profile with longer steps"
			cause = "the simulated engines ran behind their own clock"
		}
		return fmt.Sprintf("%s: this machine was too busy (%s). Run it again on a quieter machine; or relax the bound with %s, "+
			"and the figures say more about this machine; or predict it on the virtual clock (--clock virtual), "+
			"which no host load affects", r.Name, cause, relax)
	}
	return ""
}
