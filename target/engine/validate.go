package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Upper bounds of an engine's sizes: far above any deployment's, low
// enough that a typo fails validation instead of making a simulated engine
// allocate bookkeeping for billions of KV blocks. docs/spec.md lists them.
const (
	MaxModelLen      = 1 << 24 // max_model_len, max_num_batched_tokens (tokens)
	MaxNumSeqs       = 1 << 16 // max_num_seqs
	MaxBlockSize     = 1 << 16 // block_size (tokens)
	MaxNumGPUBlocks  = 1 << 24 // num_gpu_blocks_override
	MaxParallelSize  = 1024    // tensor_parallel_size, data_parallel_size
	MaxExtraArgs     = 256     // extra_args entries
	maxNameLen       = 1024    // model
	maxArgLen        = 4096    // an extra_args key or value
	maxPrecisionName = 64      // dtype, quantization, kv_cache_dtype
)

// Validate checks every field; paths are relative to the engine section
// (topology.engine in a spec). Zero means "the engine's default", so only
// negative sizes and sizes over the bounds are errors here; the simulator
// checks what it can serve (e.g. max_model_len against its KV cache) when
// it starts.
func (c Config) Validate() error {
	var l field.Errors
	l.Check(field.Required("model", c.Model), field.MaxLen("model", c.Model, maxNameLen))
	for _, f := range []struct {
		key    string
		v, max int
	}{
		{"max_model_len", c.MaxModelLen, MaxModelLen}, {"max_num_seqs", c.MaxNumSeqs, MaxNumSeqs},
		{"max_num_batched_tokens", c.MaxNumBatchedTokens, MaxModelLen}, {"block_size", c.BlockSize, MaxBlockSize},
		{"num_gpu_blocks_override", c.NumGPUBlocksOverride, MaxNumGPUBlocks},
		{"tensor_parallel_size", c.TensorParallelSize, MaxParallelSize},
		{"data_parallel_size", c.DataParallelSize, MaxParallelSize},
	} {
		l.Check(field.Between(f.key, f.v, 0, f.max))
	}
	l.Check(field.Between("gpu_memory_utilization", c.GPUMemoryUtilization, 0, 1))
	l.Check(field.MaxLen("dtype", c.Dtype, maxPrecisionName), field.MaxLen("quantization", c.Quantization, maxPrecisionName),
		field.MaxLen("kv_cache_dtype", c.KVCacheDtype, maxPrecisionName))
	l.Check(field.MaxItems("extra_args", len(c.ExtraArgs), MaxExtraArgs))
	if len(c.ExtraArgs) <= MaxExtraArgs {
		for _, k := range slices.Sorted(maps.Keys(c.ExtraArgs)) {
			if len(k) > maxArgLen {
				l.Add("extra_args", "a key is %d bytes long; at most %d", len(k), maxArgLen)
				continue
			}
			l.Check(field.MaxLen(fmt.Sprintf("extra_args.%s", k), c.ExtraArgs[k], maxArgLen))
		}
	}
	return l.Err()
}
