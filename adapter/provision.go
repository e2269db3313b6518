package adapter

import (
	"fmt"
	"log/slog"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/target/static"
	"github.com/autoinfer/autoinfer/trials"
)

// provisioner builds the target a spec names.
func provisioner(t trials.Target, log *slog.Logger) (target.Provisioner, error) {
	switch t.Kind {
	case trials.KindSim:
		p, err := simtarget.ResolveProfile(t.Profile, t.ProfileOverrides)
		if err != nil {
			return nil, fmt.Errorf("target.profile: %w", err)
		}
		return simtarget.New(simtarget.Options{Profile: p, Logger: log}), nil
	case trials.KindStatic:
		return static.New(static.Options{Workers: t.Workers, Prefill: t.Prefill, Decode: t.Decode,
			HealthPath: t.HealthPath, HealthTimeout: t.HealthTimeout}), nil
	case trials.KindProcess:
		p, err := process.New(process.Options{Command: t.Command, Host: t.Host, HealthPath: t.HealthPath,
			StartupTimeout: t.StartupTimeout, StopGracePeriod: t.StopGracePeriod, Env: t.Env, LogDir: t.LogDir, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("target.kind: unknown kind %q", t.Kind)
}

// referenceEngine is the gate's reference: the deployment's engine at full
// precision, so a quantized or otherwise degraded deployment shows up as
// divergence.
func referenceEngine(c engine.Config) engine.Config {
	c.Quantization = ""
	c.Dtype = ""
	c.DataParallelSize = 0
	c.TensorParallelSize = 0
	return c
}
