package adapter

import (
	"fmt"
	"log/slog"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/trials"
)

// provisioner builds the target a spec names, from the options its kind
// decoded (adapter/targetkinds registers the kinds).
func provisioner(t trials.Target, log *slog.Logger) (target.Provisioner, error) {
	if t.Options == nil {
		return nil, fmt.Errorf("target.kind: unknown kind %q", t.Kind)
	}
	return t.Options.Provisioner(log)
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
