package simtarget

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Resolve is the profile o describes for engines configured as e: the
// built-in profile, the profile file, or the profile derived from
// model_config on gpu for e's settings; with the overrides applied.
func (o *Source) Resolve(e engine.Config) (sim.Profile, error) {
	var p sim.Profile
	var err error
	switch {
	case o.ModelConfig != "":
		var data []byte
		if data, err = os.ReadFile(o.ModelConfig); err != nil {
			return sim.Profile{}, fmt.Errorf("reading model config: %w", err)
		}
		if e.Model == "" {
			e.Model = strings.TrimSuffix(filepath.Base(o.ModelConfig), filepath.Ext(o.ModelConfig))
		}
		p, err = derive(o.GPU, data, e)
	case o.ProfileFile != "":
		p, err = sim.ReadProfileFile(o.ProfileFile)
	default:
		// A calibrating source names its base, or calibrates the default
		// one; on the virtual clock, with no server to fit, it is that base.
		name := o.Profile
		if name == "" && o.Calibrate {
			name = DefaultProfile
		}
		p, err = sim.LookupProfile(name)
	}
	if err != nil {
		return sim.Profile{}, err
	}
	return applyOverrides(p, o.ProfileOverrides)
}

// derive derives the profile of the model in config.json data on gpu for
// e; without a tensor_parallel_size, for the smallest of 1, 2, 4 and 8
// GPUs it fits (a gate's reference replica leaves it unset).
func derive(gpu string, data []byte, e engine.Config) (sim.Profile, error) {
	if e.TensorParallelSize != 0 {
		return sim.DeriveProfile(gpu, data, e)
	}
	var errs []error
	for _, tp := range []int{1, 2, 4, 8} {
		e.TensorParallelSize = tp
		p, err := sim.DeriveProfile(gpu, data, e)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return sim.Profile{}, errors.Join(errs...)
}

// ResolveProfile looks up a built-in profile and applies per-field
// overrides keyed by the profile's YAML names (step_base_ms, …). Errors name
// the offending key.
func ResolveProfile(name string, overrides map[string]any) (sim.Profile, error) {
	p, err := sim.LookupProfile(name)
	if err != nil {
		return sim.Profile{}, err
	}
	return applyOverrides(p, overrides)
}

// applyOverrides replaces p's coefficients named in overrides.
func applyOverrides(p sim.Profile, overrides map[string]any) (sim.Profile, error) {
	if len(overrides) == 0 {
		return p, nil
	}
	name := p.Name
	known := profileKeys()
	for _, k := range slices.Sorted(maps.Keys(overrides)) {
		if !slices.Contains(known, k) || k == "name" {
			return sim.Profile{}, field.Errorf(k, "not a profile field (fields: %s)", strings.Join(known[1:], ", "))
		}
	}
	b, err := yaml.Marshal(overrides)
	if err != nil {
		return sim.Profile{}, fmt.Errorf("encoding profile overrides: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// The problems below are the overrides' (the base profile was valid):
	// an empty path puts them at profile_overrides itself.
	if err := dec.Decode(&p); err != nil {
		return sim.Profile{}, field.Errorf("", "%v", err)
	}
	p.Name = name + "+overrides"
	if err := p.Validate(); err != nil {
		return sim.Profile{}, field.Errorf("", "%v", err)
	}
	return p.WithHash(), nil
}

// profileKeys are sim.Profile's YAML keys in declaration order (name first).
func profileKeys() []string {
	var keys []string
	for f := range reflect.TypeFor[sim.Profile]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "-" { // the calibrated model and its source are not coefficients
			keys = append(keys, name)
		}
	}
	return keys
}
