package simtarget

import (
	"fmt"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
)

var _ target.ContextLimited = (*Options)(nil)

// ContextLimits are the simulated engine's max_model_len and KV capacity
// under the options' profile (overrides applied) and e, as the engine
// resolves them at startup.
func (o *Options) ContextLimits(e engine.Config) (target.Limits, error) {
	p, err := o.Resolve(e)
	if err != nil {
		return target.Limits{}, err
	}
	mml, kv := sim.ContextLimits(e, p)
	src := fmt.Sprintf("sim profile %s", p.Name)
	if e.MaxModelLen == 0 {
		src += ", default max_model_len"
	}
	return target.Limits{MaxModelLen: mml, KVTokens: kv, Source: src}, nil
}
