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
	// BF16TFLOPS is the dense bf16 tensor-core peak; FP8TFLOPS, INT8TOPS
	// and FP4TFLOPS the dense fp8, int8 and fp4 peaks (0: no such tensor
	// cores; GEMMs of that type run at the bf16 rate).
	BF16TFLOPS, FP8TFLOPS, INT8TOPS, FP4TFLOPS float64
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
	// LinkGBps is one GPU's interconnect bandwidth in one direction
	// (NVLink, xGMI or PCIe), which expert parallelism's all-to-all uses;
	// CollectiveUs the fixed latency of one collective over it.
	LinkGBps, CollectiveUs float64
	// ErrorBand is how far a derived GPU's step times may be off (a
	// fraction; 0 for a GPU with its own measurements): kernel
	// efficiencies carried over from another generation are a guess.
	ErrorBand float64
	// LargeBatchDefaults follows vLLM V1's get_batch_defaults: GPUs with at
	// least 70 GiB that are not A100s serve with max_num_seqs 1024 and
	// max_num_batched_tokens 8192, others with 256 and 2048.
	LargeBatchDefaults bool
	Source             string
}

// gpus is the built-in table. Peaks are dense (no sparsity), from the
// vendors' datasheets; memory as nvidia-smi reports it.
var gpus = []GPU{
	{Name: "h100", Description: "NVIDIA H100 SXM5 80GB", BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, INT8TOPS: 1978.9, HBMTBps: 3.35,
		MemoryGiB: 79.6, Network: "h100_dgx", LinkGBps: 450, CollectiveUs: 20, LargeBatchDefaults: true,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS bf16 dense, 1979 fp8/int8, 3.35 TB/s HBM3, NVLink4 900 GB/s)"},
	{Name: "a100", Description: "NVIDIA A100-SXM4-80GB", BF16TFLOPS: 312, INT8TOPS: 624, HBMTBps: 2.039,
		MemoryGiB: 80, Network: "a100_dgx", LinkGBps: 300, CollectiveUs: 25,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB: 312 TFLOPS bf16 dense, 624 int8, 2.039 TB/s HBM2e, NVLink3 600 GB/s; no fp8: W8A16)"},
	{Name: "h200", Description: "NVIDIA H200 SXM 141GB", BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, INT8TOPS: 1978.9, HBMTBps: 4.8,
		MemoryGiB: 140.4, Like: "h100", Network: "h100_dgx", LinkGBps: 450, CollectiveUs: 20, ErrorBand: 0.10, LargeBatchDefaults: true,
		Source: "NVIDIA H200 datasheet (same Hopper compute as H100 SXM, 4.8 TB/s HBM3e, 141 GB); efficiencies of h100"},
	{Name: "a100-40gb", Description: "NVIDIA A100-SXM4-40GB", BF16TFLOPS: 312, INT8TOPS: 624, HBMTBps: 1.555,
		MemoryGiB: 40, Like: "a100", Network: "a100_dgx", LinkGBps: 300, CollectiveUs: 25, ErrorBand: 0.12,
		Source: "NVIDIA A100 datasheet (SXM4 40GB: 312 TFLOPS bf16 dense, 1.555 TB/s HBM2); efficiencies of a100"},
	{Name: "l40s", Description: "NVIDIA L40S 48GB (PCIe)", BF16TFLOPS: 362.05, FP8TFLOPS: 733, INT8TOPS: 733, HBMTBps: 0.864,
		MemoryGiB: 45, Like: "a100", LinkGBps: 32, CollectiveUs: 30, ErrorBand: 0.25,
		Source: "NVIDIA L40S datasheet as restated by mullet.se (362.05 TFLOPS bf16 dense, 733 fp8 dense; 864 GB/s GDDR6; PCIe Gen4 x16, no NVLink); " +
			"efficiencies of a100 (Ampere), not validated on Ada; no tensor-parallel model (PCIe)"},
	{Name: "b200", Description: "NVIDIA B200 180GB (HGX, 1000 W)", BF16TFLOPS: 2250, FP8TFLOPS: 4500, INT8TOPS: 4500, FP4TFLOPS: 9000, HBMTBps: 8,
		MemoryGiB: 179, Like: "h100", Network: "h100_dgx", LinkGBps: 900, CollectiveUs: 20, ErrorBand: 0.20, LargeBatchDefaults: true,
		Source: "NVIDIA B200 (HGX 1000 W) as restated by glennklockwood.com and verda.com: 2250 TFLOPS bf16 dense, 4500 fp8, 9000 fp4, 8 TB/s HBM3e, " +
			"179 GiB as nvidia-smi reports, NVLink5 1.8 TB/s; efficiencies and all-reduce tables of h100 (Hopper) carried to Blackwell, not validated"},
	{Name: "h20", Description: "NVIDIA H20 96GB", BF16TFLOPS: 148, FP8TFLOPS: 296, INT8TOPS: 296, HBMTBps: 4.0,
		MemoryGiB: 95.6, Like: "h100", Network: "h100_dgx", LinkGBps: 450, CollectiveUs: 20, ErrorBand: 0.20, LargeBatchDefaults: true,
		Source: "NVIDIA H20 as restated by willitrunai.com: 148 TFLOPS fp16 dense, 296 int8 (fp8 taken equal, as on Hopper), 4.0 TB/s HBM3, 96 GB, " +
			"NVLink4 900 GB/s; efficiencies of h100, not validated on this compute-starved part"},
	{Name: "mi300x", Description: "AMD Instinct MI300X 192GB", BF16TFLOPS: 1307.4, FP8TFLOPS: 2614.9, INT8TOPS: 2614.9, HBMTBps: 5.3,
		MemoryGiB: 191.5, Like: "h100", Network: "h100_dgx", LinkGBps: 448, CollectiveUs: 25, ErrorBand: 0.30, LargeBatchDefaults: true,
		Source: "AMD MI300X as restated by alpharomercoma/MI300X-vs-H200: 1307.4 TFLOPS bf16 dense, 2614.9 fp8, 5.3 TB/s HBM3, 192 GB; " +
			"xGMI 896 GB/s aggregate (gpu.blog); efficiencies and all-reduce tables of h100: ROCm kernels (AITER) differ, not validated"},
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
