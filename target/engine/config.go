package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Config is one engine's configuration. Field names are vLLM's engine
// arguments in snake_case (max_num_seqs is `--max-num-seqs`), so one spec
// drives both the simulator and `vllm serve`. Zero values mean "the engine's
// default" and are not rendered as flags.
type Config struct {
	Model                string  `yaml:"model" json:"model"`
	MaxModelLen          int     `yaml:"max_model_len,omitempty" json:"max_model_len,omitempty"`
	MaxNumSeqs           int     `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens  int     `yaml:"max_num_batched_tokens,omitempty" json:"max_num_batched_tokens,omitempty"`
	BlockSize            int     `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	NumGPUBlocksOverride int     `yaml:"num_gpu_blocks_override,omitempty" json:"num_gpu_blocks_override,omitempty"`
	EnablePrefixCaching  *bool   `yaml:"enable_prefix_caching,omitempty" json:"enable_prefix_caching,omitempty"`
	TensorParallelSize   int     `yaml:"tensor_parallel_size,omitempty" json:"tensor_parallel_size,omitempty"`
	DataParallelSize     int     `yaml:"data_parallel_size,omitempty" json:"data_parallel_size,omitempty"`
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization,omitempty" json:"gpu_memory_utilization,omitempty"`
	// Dtype and Quantization set numeric precision. The simulator perturbs
	// logprobs for anything below full precision so the quality gate can see it.
	Dtype        string `yaml:"dtype,omitempty" json:"dtype,omitempty"`
	Quantization string `yaml:"quantization,omitempty" json:"quantization,omitempty"`
	// KVCacheDtype is the KV cache's element type (auto: the model's
	// dtype; fp8, fp8_e4m3, fp8_e5m2: one byte).
	KVCacheDtype string `yaml:"kv_cache_dtype,omitempty" json:"kv_cache_dtype,omitempty"`
	// EnableExpertParallel shards a mixture of experts' experts over the
	// tensor- and data-parallel ranks instead of splitting each expert.
	EnableExpertParallel bool `yaml:"enable_expert_parallel,omitempty" json:"enable_expert_parallel,omitempty"`
	// AsyncScheduling overlaps the scheduler's CPU work with the GPU's
	// step (vLLM's default from v0.14; nil: the engine's default).
	AsyncScheduling *bool `yaml:"async_scheduling,omitempty" json:"async_scheduling,omitempty"`
	// ExtraArgs are passed to vLLM verbatim as --key value (key in snake_case
	// or kebab-case); the simulator ignores them.
	ExtraArgs map[string]string `yaml:"extra_args,omitempty" json:"extra_args,omitempty"`
}

// PrefixCaching reports whether prefix caching is on (vLLM's default: on).
func (c Config) PrefixCaching() bool { return c.EnablePrefixCaching == nil || *c.EnablePrefixCaching }

// Args renders c as vLLM CLI flags in a stable order. The model is not
// included: `vllm serve` takes it as a positional argument.
func (c Config) Args() []string {
	var args []string
	add := func(flag string, v int) {
		if v != 0 {
			args = append(args, flag, strconv.Itoa(v))
		}
	}
	add("--max-model-len", c.MaxModelLen)
	add("--max-num-seqs", c.MaxNumSeqs)
	add("--max-num-batched-tokens", c.MaxNumBatchedTokens)
	add("--block-size", c.BlockSize)
	add("--num-gpu-blocks-override", c.NumGPUBlocksOverride)
	add("--tensor-parallel-size", c.TensorParallelSize)
	add("--data-parallel-size", c.DataParallelSize)
	if c.GPUMemoryUtilization != 0 {
		args = append(args, "--gpu-memory-utilization", strconv.FormatFloat(c.GPUMemoryUtilization, 'f', -1, 64))
	}
	if c.EnablePrefixCaching != nil {
		if *c.EnablePrefixCaching {
			args = append(args, "--enable-prefix-caching")
		} else {
			args = append(args, "--no-enable-prefix-caching")
		}
	}
	if c.Dtype != "" {
		args = append(args, "--dtype", c.Dtype)
	}
	if c.Quantization != "" {
		args = append(args, "--quantization", c.Quantization)
	}
	if c.KVCacheDtype != "" {
		args = append(args, "--kv-cache-dtype", c.KVCacheDtype)
	}
	if c.EnableExpertParallel {
		args = append(args, "--enable-expert-parallel")
	}
	if c.AsyncScheduling != nil {
		if *c.AsyncScheduling {
			args = append(args, "--async-scheduling")
		} else {
			args = append(args, "--no-async-scheduling")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.ExtraArgs)) {
		flag := "--" + strings.ReplaceAll(strings.TrimLeft(k, "-"), "_", "-")
		if v := c.ExtraArgs[k]; v != "" {
			args = append(args, flag, v)
		} else {
			args = append(args, flag)
		}
	}
	return args
}

// Hash is a stable digest of c's canonical JSON. Rows with equal hashes ran
// the same engine configuration.
func (c Config) Hash() (string, error) {
	b, err := json.Marshal(c) // encoding/json sorts map keys: canonical
	if err != nil {
		return "", fmt.Errorf("hashing engine config: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}
