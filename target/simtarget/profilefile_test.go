package simtarget

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

// A profile file written by sim.DeriveProfileFile runs as a trial's
// target and computes what the inline derivation (model_config and gpu) it
// was written from computes: the same content hash, whatever the names;
// the row's provenance says it came from the file.
func TestProfileFileRunsAsItsDerivation(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join("..", "sim", "configs", "mixtral-8x7b.json")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.Config{Model: "m", TensorParallelSize: 2, KVCacheDtype: "fp8"}
	file, err := sim.DeriveProfileFile("h100", data, eng)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mixtral.yaml")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := Options{Source: Source{ProfileFile: path}}
	inline := Options{Source: Source{ModelConfig: cfg, GPU: "h100"}}
	topo := target.Topology{Replicas: 1, Engine: eng}
	for _, o := range []*Options{&fromFile, &inline} {
		if err := o.Validate(topo); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	pf, err := fromFile.Resolve(eng)
	if err != nil {
		t.Fatal(err)
	}
	pi, err := inline.Resolve(eng)
	if err != nil {
		t.Fatal(err)
	}
	if pf.ContentHash == "" || pf.ContentHash != pi.ContentHash {
		t.Errorf("content hash %q from the file, %q inline: want equal", pf.ContentHash, pi.ContentHash)
	}
	if !strings.HasPrefix(pf.Source, "profile file: derived by autoinfer sim profile derive") {
		t.Errorf("provenance %q: want the file's", pf.Source)
	}
	// Another KV dtype is another profile.
	other, err := inline.Resolve(engine.Config{Model: "m", TensorParallelSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if other.ContentHash == pi.ContentHash {
		t.Errorf("bf16 and fp8 KV derive the same content hash %s", pi.ContentHash)
	}
	p, err := New(fromFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Provision(t.Context(), topo)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if got := complete(t, d.URLs(target.Collocated)[0]); got == "" {
		t.Error("empty completion")
	}
}

// Exactly one profile source; a model_config needs a gpu.
func TestProfileSourcesAreExclusive(t *testing.T) {
	t.Parallel()
	topo := target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Source: Source{Profile: "fast", ModelConfig: "x.json", GPU: "h100"}}, "give one of profile, profile_file and model_config"},
		{Options{Source: Source{ModelConfig: "x.json"}}, "gpu: required with model_config"},
		{Options{Source: Source{Profile: "fast", GPU: "h100"}}, "gpu: only with model_config"},
		{Options{Source: Source{ModelConfig: "/nonexistent.json", GPU: "h100"}}, "model_config: reading model config"},
		{Options{Source: Source{ProfileFile: "/nonexistent.yaml"}}, "profile_file: reading profile file"},
	} {
		if err := c.o.Validate(topo); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
