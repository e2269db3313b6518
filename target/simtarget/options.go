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

// Options are the sim target's keys in a trial spec's target section. The
// profile comes from one of: a built-in profile's name (profile), a profile
// file (profile_file), or a Hugging Face config.json (model_config) and a
// built-in GPU (gpu), derived for the topology's engine settings
// (tensor_parallel_size, quantization, kv_cache_dtype,
// enable_expert_parallel, ...). Relative paths are read from the working
// directory; the row records the profile's content hash.
type Options struct {
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
}

var _ target.SimulatedWorkers = (*Options)(nil)

// Default names DefaultProfile when the spec names no profile source.
func (o *Options) Default() {
	if o.Profile == "" && o.ProfileFile == "" && o.ModelConfig == "" {
		o.Profile = DefaultProfile
	}
}

// Validate checks that exactly one profile source is given and resolves it
// for topo's engine: a model that does not fit its GPUs, or an engine the
// profile cannot serve (max_model_len over the KV capacity), is refused
// with the numbers. Overrides must name profile fields with usable values.
func (o *Options) Validate(topo target.Topology) error {
	var l field.Errors
	n := 0
	for _, set := range []bool{o.Profile != "", o.ProfileFile != "", o.ModelConfig != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		l.Add("profile", "give one of profile, profile_file and model_config (with gpu)")
		return l.Err()
	case o.ModelConfig != "" && o.GPU == "":
		l.Add("gpu", "required with model_config (%s)", strings.Join(stepmodel.GPUNames(), ", "))
		return l.Err()
	case o.ModelConfig == "" && o.GPU != "":
		l.Add("gpu", "only with model_config (a profile already fixes the GPU)")
		return l.Err()
	}
	p, err := o.Resolve(topo.Engine)
	if err != nil {
		var fe *field.Error
		if errors.As(err, &fe) {
			l.Nest("profile_overrides", err)
		} else {
			l.Add(o.sourceField(), "%v", err)
		}
		return l.Err()
	}
	l.Nest("profile_overrides", profileBounds(p))
	if topo.Engine.Model != "" {
		// What the engines will make of the profile and the engine
		// settings: the memory fit and the KV capacity.
		if _, err := sim.MemoryBytes(sim.Options{Engine: topo.Engine, Profile: p}); err != nil {
			l.Add(o.sourceField(), "%v", err)
		}
	}
	return l.Err()
}

// sourceField is the key that names the profile's source.
func (o *Options) sourceField() string {
	switch {
	case o.ModelConfig != "":
		return "model_config"
	case o.ProfileFile != "":
		return "profile_file"
	}
	return "profile"
}

// Provisioner builds the sim target.
func (o *Options) Provisioner(log *slog.Logger) (target.Provisioner, error) { return New(*o, log) }

// Simulated reports true: the workers are simulated engines.
func (o *Options) Simulated() bool { return true }
