package sim

import (
	"fmt"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

// CPU overhead of a vLLM V1 engine step, outside the GPU kernels: scheduling,
// input preparation, kernel launch gaps, sampling, detokenisation and output
// processing. vidur's tables hold GPU kernel time only; these two figures are
// fitted on vLLM's nightly latency benchmark for Llama-3-8B on one H100 (batch
// 8, 32 tokens in, 128 out: 997.5 ms; shared/reference/fidelity.md row 1) and
// are the same for every profile. See docs/sim.md for what they are checked
// against.
const (
	cpuStepBaseMs = 0.70
	cpuUsPerSeq   = 0.0
)

// KV transfer defaults of calibrated profiles: a 400 Gb/s RDMA NIC per
// engine pair (50 GB/s), ~3 ms to launch one transfer (vLLM issue 23780) and
// ~3.5 µs to post one descriptor (vLLM issues 50913 and 34054: 3.2–3.8 µs;
// shared/reference/fidelity.md).
const (
	kvLinkGBps         = 50
	kvLaunchMs         = 3
	kvDescriptorUs     = 3.5
	gpuMemoryUtilRatio = 0.9 // vLLM's gpu_memory_utilization default
)

// CalibratedProfile is the profile of a calibrated step model: its GPU's
// vLLM V1 batch defaults, KV capacity from the memory the weights leave at
// gpu_memory_utilization 0.9, the shared CPU overhead and KV link figures.
func CalibratedProfile(name string, m *stepmodel.Model) Profile {
	seqs, batched := m.GPU.BatchDefaults()
	p := Profile{
		Name: name, StepBaseMs: cpuStepBaseMs, CPUUsPerSeq: cpuUsPerSeq, GPUTimeScale: 1,
		KVBytesPerToken: int(m.KVBytesPerToken()), LinkGBps: kvLinkGBps, TransferLatencyMs: kvLaunchMs,
		KVDescriptorUs: kvDescriptorUs, NumLayers: m.Arch.Layers,
		NumGPUBlocks: m.KVBlocks(gpuMemoryUtilRatio, defaultBlockSize, batched, seqs),
		MaxNumSeqs:   seqs, MaxNumBatchedTokens: batched, Model: m,
	}
	p.Source = "step model " + stepmodel.TablesVersion + ": " + m.Source + "; " + m.Accuracy()
	return p.WithHash()
}

// DeriveProfile builds a profile for a model without measurements from its
// Hugging Face config.json and a GPU of the built-in table, for the engine
// e (its model name, tensor_parallel_size, quantization, kv_cache_dtype,
// expert parallelism and batch limits): the linear layers and experts from
// the architecture with the GPU's fitted efficiencies (a measured table is
// used when one exists for the same shape), attention scaled from the
// measured rows. A model whose weights leave no room for KV is refused with
// the numbers.
func DeriveProfile(gpu string, configJSON []byte, e engcfg.Config) (Profile, error) {
	g, err := stepmodel.LookupGPU(gpu)
	if err != nil {
		return Profile{}, fmt.Errorf("gpu: %w", err)
	}
	a, err := stepmodel.ArchFromHFConfig(e.Model, configJSON)
	if err != nil {
		return Profile{}, err
	}
	m, err := stepmodel.NewModel(a, g, max(1, e.TensorParallelSize))
	if err != nil {
		return Profile{}, err
	}
	if m, err = m.Configure(setupOf(e)); err != nil {
		return Profile{}, err
	}
	p := CalibratedProfile(stepmodel.ProfileName(gpu, e.Model, m.TP), m)
	util := e.GPUMemoryUtilization
	if util == 0 {
		util = gpuMemoryUtilRatio
	}
	if err := m.FitError(util, orDefault(e.MaxNumBatchedTokens, p.MaxNumBatchedTokens), orDefault(e.MaxNumSeqs, p.MaxNumSeqs)); err != nil {
		return Profile{}, err
	}
	return p, nil
}
