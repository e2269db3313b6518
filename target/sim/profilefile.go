package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

// ProfileFile is a profile kept in a file (YAML), as `autoinfer sim
// profile derive` or a calibration writes it: where it comes from and how
// far it is stated to be off, and either a derivation (gpu, model_config,
// the engine settings it was derived for), a built-in profile to start
// from (base), or neither (a linear profile); coefficients replace any of
// the profile's YAML fields.
type ProfileFile struct {
	Name       string `yaml:"name"`
	Provenance string `yaml:"provenance"`
	Error      string `yaml:"error"`
	Base       string `yaml:"base,omitempty"`
	GPU        string `yaml:"gpu,omitempty"`
	// ModelConfig is a Hugging Face config.json, inline.
	ModelConfig  map[string]any `yaml:"model_config,omitempty"`
	Engine       engcfg.Config  `yaml:"engine,omitempty"`
	Coefficients map[string]any `yaml:"coefficients,omitempty"`
	// Calibration is set on a profile fitted to a live server.
	Calibration *Calibration `yaml:"calibration,omitempty"`
}

// ReadProfileFile reads the profile file at path.
func ReadProfileFile(path string) (Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, fmt.Errorf("reading profile file: %w", err)
	}
	p, err := ParseProfileFile(data)
	if err != nil {
		return Profile{}, fmt.Errorf("profile file %s: %w", path, err)
	}
	return p, nil
}

// ParseProfileFile builds the profile a profile file describes.
func ParseProfileFile(data []byte) (Profile, error) {
	var f ProfileFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Profile{}, err
	}
	if f.Name == "" || f.Provenance == "" || f.Error == "" {
		return Profile{}, fmt.Errorf("name, provenance and error: every profile file states them (got %q, %q, %q)", f.Name, f.Provenance, f.Error)
	}
	if c := f.Calibration; c != nil && c.Unfit != "" {
		return Profile{}, fmt.Errorf("calibration marked this profile unfit: %s", c.Unfit)
	}
	var p Profile
	switch {
	case f.ModelConfig != nil:
		if f.GPU == "" || f.Base != "" {
			return Profile{}, fmt.Errorf("model_config: needs gpu, and no base")
		}
		cfg, err := json.Marshal(f.ModelConfig)
		if err != nil {
			return Profile{}, fmt.Errorf("model_config: %w", err)
		}
		e := f.Engine
		e.Model = f.Name
		if p, err = DeriveProfile(f.GPU, cfg, e); err != nil {
			return Profile{}, err
		}
	case f.Base != "":
		var err error
		if p, err = LookupProfile(f.Base); err != nil {
			return Profile{}, fmt.Errorf("base: %w", err)
		}
	default:
		p = Profile{LinkGBps: kvLinkGBps}
	}
	if len(f.Coefficients) > 0 {
		b, err := yaml.Marshal(f.Coefficients)
		if err != nil {
			return Profile{}, fmt.Errorf("coefficients: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&p); err != nil {
			return Profile{}, fmt.Errorf("coefficients: %w", err)
		}
	}
	p.Name = f.Name
	p.Source = fmt.Sprintf("profile file: %s; stated error %s", f.Provenance, f.Error)
	if p.Model != nil {
		p.Source += "; " + p.Model.Source
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p.WithHash(), nil
}

// DeriveProfileFile is the profile file of a derivation: what `autoinfer
// sim profile derive` writes.
func DeriveProfileFile(gpu string, configJSON []byte, e engcfg.Config) ([]byte, error) {
	p, err := DeriveProfile(gpu, configJSON, e)
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(configJSON, &cfg); err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	e.Model = ""
	f := ProfileFile{Name: p.Name, Error: p.Model.Accuracy(),
		Provenance: "derived by autoinfer sim profile derive, step model " + stepmodel.TablesVersion + ": " + p.Model.Source,
		GPU:        gpu, ModelConfig: cfg, Engine: e}
	return yaml.Marshal(f)
}
