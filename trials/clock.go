package trials

import (
	"errors"
	"fmt"
	"slices"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Clocks a trial runs on.
const (
	// ClockReal runs the deployment in real time over HTTP (the default,
	// stored as "").
	ClockReal = "real"
	// ClockVirtual runs a simulated deployment in one process on one
	// discrete-event clock (adapter/virtual, docs/whatif.md).
	ClockVirtual = "virtual"
)

// Clocks lists the clock values a spec or --clock accepts.
func Clocks() []string { return []string{ClockReal, ClockVirtual} }

// Virtual reports whether the trial runs on the virtual clock.
func (s Spec) Virtual() bool { return s.Clock == ClockVirtual }

// validateClock checks clock and what a virtual clock needs: simulated
// workers, or real ones a profile describes (run as simulated engines of
// it), and, when a router runs, autoinfer's own router (its decision
// code is what runs in virtual time).
func validateClock(s *Spec, p *problems) {
	totalErr := msBetween("http_overhead_ms", s.HTTPOverheadMs, MaxHTTPOverheadMs)
	inErr := msBetween("http_inbound_ms", s.HTTPInboundMs, MaxHTTPOverheadMs)
	p.nest("", errors.Join(totalErr, inErr,
		msBetween("engine_lag_ms", s.EngineLagMs, MaxEngineLagMs),
		msBetween("engine_wake_ms", s.EngineWakeMs, MaxEngineWakeMs)))
	if totalErr == nil && inErr == nil && s.HTTPInboundMs > s.HTTPOverheadMs {
		p.add("http_inbound_ms", "is the part of http_overhead_ms before the engine: must be at most http_overhead_ms (%g), got %g", s.HTTPOverheadMs, s.HTTPInboundMs)
	}
	switch s.Clock {
	case "", ClockReal:
		return
	case ClockVirtual:
	default:
		p.add("clock", "must be one of %v, got %q", Clocks(), s.Clock)
		return
	}
	if s.Target.Options != nil && !simulated(s.Target) && !profiled(s.Target) {
		p.add("clock", "virtual needs simulated workers or a profile of the servers (target.kind %s runs real servers and names no profile)", s.Target.Kind)
	}
	if s.RouterLaunched() && s.Router.Launch == LaunchExternal {
		p.add("router.launch", "external runs another router's code: the virtual clock runs autoinfer's (embedded or process)")
	}
}

// MaxHTTPOverheadMs bounds http_overhead_ms: a loopback HTTP path costs
// about a millisecond; a second means the figure measured something else.
const MaxHTTPOverheadMs = 1000

// MaxEngineLagMs bounds engine_lag_ms: a sim engine's loop on a quiet
// host wakes well under a millisecond late; 100 ms is a host the engine-lag
// check refuses, not a lag to model.
const MaxEngineLagMs = 100

// MaxEngineWakeMs bounds engine_wake_ms: a step an idle sim engine
// planned on waking completes about a millisecond late at most on a quiet
// host; 100 ms is a host too loaded to measure on.
const MaxEngineWakeMs = 100

// Flags that override the modelled HTTP path and engine lateness.
const (
	FlagHTTPOverhead = "--http-overhead-ms"
	FlagHTTPInbound  = "--http-inbound-ms"
	FlagEngineLag    = "--engine-lag-ms"
	FlagEngineWake   = "--engine-wake-ms"
)

// SetEngineWake overrides every trial's engine_wake_ms (the
// --engine-wake-ms flag); see setMs.
func SetEngineWake(ts []Trial, wakeMs float64) error {
	return setMs(ts, FlagEngineWake, wakeMs, MaxEngineWakeMs, func(s *Spec) *float64 { return &s.EngineWakeMs })
}

// SetEngineLag overrides every trial's engine_lag_ms (the --engine-lag-ms
// flag); see setMs.
func SetEngineLag(ts []Trial, lagMs float64) error {
	return setMs(ts, FlagEngineLag, lagMs, MaxEngineLagMs, func(s *Spec) *float64 { return &s.EngineLagMs })
}

// setMs sets the key at points to in every trial to v and recomputes the
// spec hashes of virtual trials, which cover it. A value out of bounds is
// an error naming flag, and changes nothing.
func setMs(ts []Trial, flag string, v, maxMs float64, at func(*Spec) *float64) error {
	if err := msBetween(flag, v, maxMs); err != nil {
		return err
	}
	for i := range ts {
		*at(&ts[i].Spec) = v
	}
	return rehash(ts)
}

// msBetween wants a duration in milliseconds within [0, maxMs]; NaN fails.
func msBetween(path string, v, maxMs float64) error {
	if !(v >= 0 && v <= maxMs) { // NaN fails both
		return field.Errorf(path, "must be between 0 and %g ms, got %g", maxMs, v)
	}
	return nil
}

// SetHTTPPath overrides every trial's http_overhead_ms and http_inbound_ms
// (the --http-overhead-ms and --http-inbound-ms flags; nil keeps the
// spec's value) and recomputes the spec hashes of virtual trials, which
// cover them. Errors name the flag: a value out of bounds, or an inbound
// part above the total it is part of.
func SetHTTPPath(ts []Trial, overheadMs, inboundMs *float64) error {
	for _, f := range []struct {
		name string
		v    *float64
	}{{FlagHTTPOverhead, overheadMs}, {FlagHTTPInbound, inboundMs}} {
		if f.v != nil {
			if err := msBetween(f.name, *f.v, MaxHTTPOverheadMs); err != nil {
				return err
			}
		}
	}
	set := func(s *Spec) {
		if overheadMs != nil {
			s.HTTPOverheadMs = *overheadMs
		}
		if inboundMs != nil {
			s.HTTPInboundMs = *inboundMs
		}
	}
	for i := range ts { // check all before changing any
		s := ts[i].Spec
		set(&s)
		if o, in := s.HTTPOverheadMs, s.HTTPInboundMs; in > o {
			if inboundMs != nil {
				return field.Errorf(FlagHTTPInbound, "is the part of http_overhead_ms before the engine: must be at most http_overhead_ms (%g), got %g", o, in)
			}
			return field.Errorf(FlagHTTPOverhead, "must be at least the spec's http_inbound_ms (%g), the part of it before the engine, got %g", in, o)
		}
	}
	for i := range ts {
		set(&ts[i].Spec)
	}
	return rehash(ts)
}

// normaliseClock stores the real clock as "", so `clock: real` leaves the
// spec hash of a spec without the key.
func normaliseClock(s *Spec) {
	if s.Clock == ClockReal {
		s.Clock = ""
	}
}

// SetClock overrides every trial's clock (the --clock flag), validates what
// the clock needs, and recomputes the spec hashes and sweep id, which cover
// it: a virtual trial is never the same trial as a real one.
func SetClock(ts []Trial, clock, flag string) error {
	if !slices.Contains(Clocks(), clock) {
		return field.Errorf(flag, "must be one of %v, got %q", Clocks(), clock)
	}
	for i := range ts {
		ts[i].Clock = clock
		normaliseClock(&ts[i].Spec)
		var p problems
		validateClock(&ts[i].Spec, &p)
		if len(p.fields) > 0 {
			fe := p.fields[0]
			return fmt.Errorf("%s %s: %s: %s", flag, clock, fe.Path, fe.Msg)
		}
	}
	return rehash(ts)
}

// rehash recomputes the spec hashes and the sweep id after a flag changed
// what they cover.
func rehash(ts []Trial) error {
	for i := range ts {
		h, err := ts[i].Hash()
		if err != nil {
			return err
		}
		ts[i].SpecHash = h
	}
	if len(ts) > 0 && ts[0].SweepID != "" {
		id := sweepID(ts)
		for i := range ts {
			ts[i].SweepID = id
		}
	}
	return nil
}
