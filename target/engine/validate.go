package engine

import "github.com/autoinfer/autoinfer/trials/field"

// Validate checks every field; paths are relative to the engine section
// (topology.engine in a spec). Zero means "the engine's default", so only
// negative sizes are errors here; the simulator checks what it can serve
// (e.g. max_model_len against its KV cache) when it starts.
func (c Config) Validate() error {
	var l field.Errors
	l.Check(field.Required("model", c.Model))
	for _, f := range []struct {
		key string
		v   int
	}{
		{"max_model_len", c.MaxModelLen}, {"max_num_seqs", c.MaxNumSeqs},
		{"max_num_batched_tokens", c.MaxNumBatchedTokens}, {"block_size", c.BlockSize},
		{"num_gpu_blocks_override", c.NumGPUBlocksOverride}, {"tensor_parallel_size", c.TensorParallelSize},
		{"data_parallel_size", c.DataParallelSize},
	} {
		l.Check(field.AtLeast(f.key, f.v, 0))
	}
	l.Check(field.Between("gpu_memory_utilization", c.GPUMemoryUtilization, 0, 1))
	return l.Err()
}
