package simtarget

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Kind is the name trial specs give this target (target.kind: sim).
const Kind = "sim"

// DefaultProfile is the profile of a spec that names none.
const DefaultProfile = "h100-llama3-8b"

// Options are the sim target's keys in a trial spec's target section: the
// profile's source, which names DefaultProfile when the spec names none.
type Options struct {
	Source `yaml:",inline"`
}

// Source says where a profile comes from, as a spec's target section
// writes it: a built-in profile's name (profile), a profile file
// (profile_file), or a Hugging Face config.json (model_config) and a
// built-in GPU (gpu), derived for the topology's engine settings
// (tensor_parallel_size, quantization, kv_cache_dtype,
// enable_expert_parallel, ...). Relative paths are read from the working
// directory; the row records the profile's content hash. The sim target's
// engines run it; a target of real servers may name one too (the static
// target's profile keys), which its trials' virtual replays then run as
// their prediction.
type Source struct {
	// Profile names a built-in hardware profile (sim.ProfileNames).
	Profile string `yaml:"profile" json:"profile,omitempty"`
	// ProfileFile is a profile file (autoinfer sim profile derive).
	ProfileFile string `yaml:"profile_file" json:"profile_file,omitempty"`
	// ModelConfig is a Hugging Face config.json to derive a profile from,
	// on GPU.
	ModelConfig string `yaml:"model_config" json:"model_config,omitempty"`
	GPU         string `yaml:"gpu" json:"gpu,omitempty"`
	// ProfileOverrides replace single profile coefficients, keyed by their
	// YAML names (step_base_ms, …).
	ProfileOverrides map[string]any `yaml:"profile_overrides" json:"profile_overrides,omitempty"`
	// Calibration, on a target of real servers, fits the profile to them
	// before each trial (calibrate: true).
	Calibration `yaml:",inline"`
}

var (
	_ target.SimulatedWorkers = (*Options)(nil)
	_ target.ProfiledWorkers  = (*Options)(nil)
)

// Default names DefaultProfile when the spec names no profile source.
func (o *Options) Default() {
	if !o.Profiled() {
		o.Profile = DefaultProfile
	}
}

// Validate checks the profile's source for topo (Source.Check); the sim
// target's engines are their profile, so there is nothing to calibrate.
func (o *Options) Validate(topo target.Topology) error {
	if o.Calibrate || o.CalibrateBudget != 0 || o.CalibrateFile != "" {
		return field.Errorf("calibrate", "only for targets of real servers (static, process, kubernetes): simulated engines are their profile")
	}
	return o.Check(topo)
}

// Profiled reports whether the source names a profile, or calibrates one.
func (s *Source) Profiled() bool {
	return s.Profile != "" || s.ProfileFile != "" || s.ModelConfig != "" || s.Calibrate
}

// Check checks that at most one profile source is given and resolves the
// one given for topo's engine: a model that does not fit its GPUs, or an
// engine the profile cannot serve (max_model_len over the KV capacity), is
// refused with the numbers. Overrides must name profile fields with usable
// values. A source naming no profile passes unless it has a gpu or
// overrides, which only a profile can use.
func (s *Source) Check(topo target.Topology) error {
	var l field.Errors
	if err := s.checkCalibration(topo); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{s.Profile != "", s.ProfileFile != "", s.ModelConfig != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		l.Add("profile", "give one of profile, profile_file and model_config (with gpu)")
		return l.Err()
	case s.ModelConfig != "" && s.GPU == "":
		l.Add("gpu", "required with model_config (%s)", strings.Join(stepmodel.GPUNames(), ", "))
		return l.Err()
	case s.ModelConfig == "" && s.GPU != "":
		l.Add("gpu", "only with model_config (a profile already fixes the GPU)")
		return l.Err()
	case n == 0 && len(s.ProfileOverrides) > 0:
		l.Add("profile_overrides", "only with a profile, profile_file or model_config")
		return l.Err()
	case n == 0 && !s.Calibrate:
		return nil
	}
	p, err := s.Resolve(topo.Engine)
	if err != nil {
		var fe *field.Error
		if errors.As(err, &fe) {
			l.Nest("profile_overrides", err)
		} else {
			l.Add(s.sourceField(), "%v", err)
		}
		return l.Err()
	}
	l.Nest("profile_overrides", profileBounds(p))
	if topo.Engine.Model != "" {
		// What the engines will make of the profile and the engine
		// settings: the memory fit and the KV capacity.
		if _, err := sim.MemoryBytes(sim.Options{Engine: topo.Engine, Profile: p}); err != nil {
			l.Add(s.sourceField(), "%v", err)
		}
	}
	return l.Err()
}

// sourceField is the key that names the profile's source.
func (s *Source) sourceField() string {
	switch {
	case s.ModelConfig != "":
		return "model_config"
	case s.ProfileFile != "":
		return "profile_file"
	}
	return "profile"
}

// Provisioner builds the sim target.
func (o *Options) Provisioner(log *slog.Logger) (target.Provisioner, error) { return New(*o, log) }

// Simulated reports true: the workers are simulated engines.
func (o *Options) Simulated() bool { return true }
