package simtarget

import (
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Upper bounds of the profile fields an override can raise past what the
// built-in profiles hold: the same as the engine settings they stand in
// for, so profile_overrides cannot ask a simulated engine for more
// bookkeeping than topology.engine can.
const (
	maxKVBytesPerToken = 1 << 24
	maxNumLayers       = 4096
)

// profileBounds checks the sizes of a resolved profile; paths are relative
// to profile_overrides:, where a too-large size can come from.
func profileBounds(p sim.Profile) error {
	var l field.Errors
	l.Check(
		field.AtMost("num_gpu_blocks", p.NumGPUBlocks, engine.MaxNumGPUBlocks),
		field.AtMost("max_num_seqs", p.MaxNumSeqs, engine.MaxNumSeqs),
		field.AtMost("max_num_batched_tokens", p.MaxNumBatchedTokens, engine.MaxModelLen),
		field.AtMost("kv_bytes_per_token", p.KVBytesPerToken, maxKVBytesPerToken),
		field.AtMost("num_layers", p.NumLayers, maxNumLayers),
	)
	return l.Err()
}
