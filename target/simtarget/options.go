package simtarget

import (
	"log/slog"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Kind is the name trial specs give this target (target.kind: sim).
const Kind = "sim"

// DefaultProfile is the profile of a spec that names none.
const DefaultProfile = "h100-llama3-8b"

// Options are the sim target's keys in a trial spec's target section.
type Options struct {
	// Profile names a built-in hardware profile (sim.ProfileNames).
	Profile string `yaml:"profile" json:"profile,omitempty"`
	// ProfileOverrides replace single profile coefficients, keyed by their
	// YAML names (step_base_ms, …).
	ProfileOverrides map[string]any `yaml:"profile_overrides" json:"profile_overrides,omitempty"`
}

var _ target.SimulatedWorkers = (*Options)(nil)

// Default names DefaultProfile when the spec names none.
func (o *Options) Default() {
	if o.Profile == "" {
		o.Profile = DefaultProfile
	}
}

// Validate checks that the profile exists and that its overrides name
// profile fields with usable values. Every engine of the topology runs the
// same profile, so topo is not needed.
func (o *Options) Validate(target.Topology) error {
	var l field.Errors
	if _, err := sim.LookupProfile(o.Profile); err != nil {
		l.Add("profile", "%v", err)
	} else if p, err := ResolveProfile(o.Profile, o.ProfileOverrides); err != nil {
		l.Nest("profile_overrides", err)
	} else {
		l.Nest("profile_overrides", profileBounds(p))
	}
	return l.Err()
}

// Provisioner builds the sim target.
func (o *Options) Provisioner(log *slog.Logger) (target.Provisioner, error) { return New(*o, log) }

// Simulated reports true: the workers are simulated engines.
func (o *Options) Simulated() bool { return true }
