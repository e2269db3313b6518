package stepmodel

import (
	"fmt"
	"slices"
	"strings"
)

// GPU is one accelerator of the built-in table: the datasheet figures the
// step model scales by, and where its fitted efficiencies come from.
type GPU struct {
	Name        string
	Description string
	// BF16TFLOPS is the dense bf16 tensor-core peak; FP8TFLOPS the dense
	// fp8 peak (0: no fp8 tensor cores).
	BF16TFLOPS, FP8TFLOPS float64
	// HBMTBps is the memory bandwidth in TB/s.
	HBMTBps float64
	// MemoryGiB is the device memory as the driver reports it.
	MemoryGiB float64
	// Like names the measured GPU whose fitted efficiencies (fractions of
	// peak, fixed kernel latencies) this one borrows; empty for a GPU with
	// its own measurements.
	Like string
	// Network is the all-reduce table used with tensor parallelism (empty:
	// tensor parallelism is not modelled on this GPU).
	Network string
	// LargeBatchDefaults follows vLLM V1's get_batch_defaults: GPUs with at
	// least 70 GiB that are not A100s serve with max_num_seqs 1024 and
	// max_num_batched_tokens 8192, others with 256 and 2048.
	LargeBatchDefaults bool
	Source             string
}

// gpus is the built-in table. Peaks are dense (no sparsity), from the
// vendors' datasheets; memory as nvidia-smi reports it.
var gpus = []GPU{
	{Name: "h100", Description: "NVIDIA H100 SXM5 80GB", BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, HBMTBps: 3.35,
		MemoryGiB: 79.6, Network: "h100_dgx", LargeBatchDefaults: true,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS bf16 dense, 3.35 TB/s HBM3)"},
	{Name: "a100", Description: "NVIDIA A100-SXM4-80GB", BF16TFLOPS: 312, HBMTBps: 2.039,
		MemoryGiB: 80, Network: "a100_dgx",
		Source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB: 312 TFLOPS bf16 dense, 2.039 TB/s HBM2e)"},
	{Name: "h200", Description: "NVIDIA H200 SXM 141GB", BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, HBMTBps: 4.8,
		MemoryGiB: 140.4, Like: "h100", Network: "h100_dgx", LargeBatchDefaults: true,
		Source: "NVIDIA H200 datasheet (same Hopper compute as H100 SXM, 4.8 TB/s HBM3e, 141 GB); efficiencies of h100"},
	{Name: "a100-40gb", Description: "NVIDIA A100-SXM4-40GB", BF16TFLOPS: 312, HBMTBps: 1.555,
		MemoryGiB: 40, Like: "a100", Network: "a100_dgx",
		Source: "NVIDIA A100 datasheet (SXM4 40GB: 312 TFLOPS bf16 dense, 1.555 TB/s HBM2); efficiencies of a100"},
	{Name: "l40s", Description: "NVIDIA L40S 48GB (PCIe)", BF16TFLOPS: 362.1, FP8TFLOPS: 733, HBMTBps: 0.864,
		MemoryGiB: 45, Like: "a100",
		Source: "NVIDIA L40S datasheet (362 TFLOPS bf16 dense, 864 GB/s GDDR6); efficiencies of a100 (Ampere), not validated on Ada; no tensor-parallel model (PCIe)"},
}

// LookupGPU finds a GPU of the built-in table by name.
func LookupGPU(name string) (GPU, error) {
	for _, g := range gpus {
		if g.Name == name {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("unknown GPU %q (built-in: %s)", name, strings.Join(GPUNames(), ", "))
}

// GPUNames lists the built-in GPUs.
func GPUNames() []string {
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.Name
	}
	slices.Sort(names)
	return names
}

// efficiencyGPU is the GPU whose fitted efficiencies g uses.
func (g GPU) efficiencyGPU() string {
	if g.Like != "" {
		return g.Like
	}
	return g.Name
}

// bytesPerMs and flopsPerMs are the peaks in per-millisecond units.
func (g GPU) bytesPerMs() float64 { return g.HBMTBps * 1e9 }
func (g GPU) flopsPerMs() float64 { return g.BF16TFLOPS * 1e9 }

// BatchDefaults are vLLM V1's server defaults for max_num_seqs and
// max_num_batched_tokens on g (vllm/engine/arg_utils.py, get_batch_defaults,
// OPENAI_API_SERVER usage context).
func (g GPU) BatchDefaults() (maxNumSeqs, maxBatchedTokens int) {
	if g.LargeBatchDefaults {
		return 1024, 8192
	}
	return 256, 2048
}
