package process

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Validate names every bad key relative to the target section.
func TestOptionsValidate(t *testing.T) {
	topo := target.Topology{Replicas: 1, Engine: engine.Config{Model: "m", MaxNumSeqs: 8}}
	o := Options{Command: "vllm serve {model} --port {port}", Host: "bad_host", StartupTimeout: -time.Second,
		Env: map[string]string{"A": "{nope}"}, HealthPath: "health"}
	var got []string
	for _, e := range field.Flatten(o.Validate(topo)) {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *field.Error", e)
		}
		got = append(got, fe.Path)
	}
	want := []string{"host", "startup_timeout", "health_path", "env.A", "command"}
	if !slices.Equal(got, want) {
		t.Errorf("problems at %v, want %v", got, want)
	}
	o = Options{Command: "vllm serve {model} --port {port} {engine_args}"}
	o.Default()
	if err := o.Validate(topo); err != nil || o.Host != DefaultHost || o.StartupTimeout != DefaultStartupTimeout {
		t.Errorf("defaulted options: %+v, %v", o, err)
	}
}
