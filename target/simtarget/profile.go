package simtarget

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials/field"
)

// ResolveProfile looks up a built-in profile and applies per-field
// overrides keyed by the profile's YAML names (step_base_ms, …). Errors name
// the offending key.
func ResolveProfile(name string, overrides map[string]any) (sim.Profile, error) {
	p, err := sim.LookupProfile(name)
	if err != nil {
		return sim.Profile{}, err
	}
	if len(overrides) == 0 {
		return p, nil
	}
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
	if err := dec.Decode(&p); err != nil {
		return sim.Profile{}, fmt.Errorf("profile overrides: %w", err)
	}
	p.Name = name + "+overrides"
	if err := p.Validate(); err != nil {
		return sim.Profile{}, err
	}
	return p, nil
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
