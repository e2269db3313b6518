package failure

import "fmt"

// KindHostOverloaded names HostOverloaded.
const KindHostOverloaded Kind = "HostOverloaded"

// The figures HostOverloaded names: the spec's checks keys without their
// max_ prefix.
const (
	// FigureScheduleDelayP99 is the driver's p99 lateness (send time after
	// due time) in milliseconds, open-loop arrivals only.
	FigureScheduleDelayP99 = "schedule_delay_p99_ms"
	// FigureEngineLagRatio is how far the simulated engines' steps ended
	// behind their modelled end, over their modelled busy time, in the
	// measured window.
	FigureEngineLagRatio = "engine_lag_ratio"
)

// Defaults for the bounds, which a quiet 2-core machine holds: the driver
// sends within 100 ms of schedule at p99, and the simulated engines end
// their steps at most half their modelled busy time late in sum.
const (
	DefaultScheduleDelayLimitMs = 100
	DefaultEngineLagRatioLimit  = 0.5
)

// HostOverloaded means the machine that ran the trial could not keep up
// with it: the driver sent late, or the simulated engines fell behind their
// own clock. Either way the figures describe the host, not the deployment.
// Figure is FigureScheduleDelayP99 or FigureEngineLagRatio; when both were
// over their bounds, the one furthest over (relative to its bound).
//
// A real-time trial of simulated engines is judged by its effect instead:
// Figure is then a metric (ReplayMetrics) whose measured Value is past the
// Bound its own virtual replay (Replay) and the metric's tolerance give.
type HostOverloaded struct {
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Bound  float64 `json:"bound"`
	// Replay is the metric's value in the trial's virtual replay; nil when
	// a bound on a host figure judged the trial.
	Replay *float64 `json:"replay,omitempty"`
}

// Kind implements Failure.
func (HostOverloaded) Kind() Kind { return KindHostOverloaded }

func (f HostOverloaded) Error() string {
	if f.Replay != nil {
		return f.replayMessage()
	}
	return fmt.Sprintf("host overloaded: %s = %s > bound %s (the figures would describe this machine, not the deployment)",
		f.Figure, round(f.Value), round(f.Bound))
}

// hostRule compares the driver's schedule delay and the engines' lag
// ratio with their bounds (0: the default). An engine lag that was not
// measured (real engines export none) is never over.
//
// A trial with a virtual replay (Observation.Replay) is judged by its
// effect: the schedule delay first (the replay sends on schedule, so a
// driver that did not is not compared with it), then the figures against
// the replay's; the engines' lag is then a diagnostic only, recorded on the
// row whatever it is.
func hostRule(o *Observation) Failure {
	if o.Replay != nil {
		if f := delayRule(o); f != nil {
			return *f
		}
		if f := JudgeReplay(o.Replay); f != nil {
			return *f
		}
		return nil
	}
	lagLimit := o.EngineLagRatioLimit
	if lagLimit == 0 {
		lagLimit = DefaultEngineLagRatioLimit
	}
	worst := delayRule(o)
	over := func(figure string, v, bound float64) {
		if v <= bound || (worst != nil && v/bound <= worst.Value/worst.Bound) {
			return
		}
		worst = &HostOverloaded{Figure: figure, Value: v, Bound: bound}
	}
	if o.EngineLagRatio != nil {
		over(FigureEngineLagRatio, *o.EngineLagRatio, lagLimit)
	}
	if worst == nil {
		return nil
	}
	return *worst
}

// delayRule is HostOverloaded on the driver's p99 schedule delay when it is
// over its bound (0: the default), else nil.
func delayRule(o *Observation) *HostOverloaded {
	limit := o.ScheduleDelayLimitMs
	if limit == 0 {
		limit = DefaultScheduleDelayLimitMs
	}
	if o.P99ScheduleDelayMs <= limit {
		return nil
	}
	return &HostOverloaded{Figure: FigureScheduleDelayP99, Value: o.P99ScheduleDelayMs, Bound: limit}
}
