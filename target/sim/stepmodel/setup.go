package stepmodel

import (
	"fmt"
	"strings"
)

// Setup is what an engine's configuration changes in a step model, by
// vLLM's engine argument names.
type Setup struct {
	// Quantization is --quantization: the weights' format ("": the
	// checkpoint's own, config.json's quantization_config).
	Quantization string
	// Dtype is --dtype; "fp8" (kept for older specs) means fp8 weights
	// and KV cache.
	Dtype string
	// KVCacheDtype is --kv-cache-dtype: auto (the model's dtype), fp8,
	// fp8_e4m3, fp8_e5m2 (one byte per element).
	KVCacheDtype string
	// ExpertParallel is --enable-expert-parallel; DataParallel is
	// --data-parallel-size. With expert parallelism a MoE's experts are
	// spread over all tensor × data parallel GPUs.
	ExpertParallel bool
	DataParallel   int
	// MaxModelLen is --max-model-len: the sequence length sliding-window
	// layers' KV is sized for (0: 8192).
	MaxModelLen int
}

// Configure is m under s: weight and KV precision, expert parallelism.
// Errors name the engine field.
func (m *Model) Configure(s Setup) (*Model, error) {
	c := *m
	q := s.Quantization
	if q == "" && strings.EqualFold(s.Dtype, "fp8") {
		q = "fp8"
	}
	if q != "" {
		p, err := LookupPrecision(q)
		if err != nil {
			return nil, fmt.Errorf("engine.quantization: %w", err)
		}
		c.Prec, c.ExpertPrec = p, p
		if a := m.Arch; a.ExpertsOnly && a.Quantization != "" {
			if own, err := LookupPrecision(a.Quantization); err == nil && own == p {
				c.Prec = BF16 // the checkpoint quantizes only its experts
			}
		}
	}
	switch kv := strings.ToLower(s.KVCacheDtype); kv {
	case "", "auto":
		if strings.EqualFold(s.Dtype, "fp8") {
			c.KVElemBytes = 1
		}
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
		// Per-tensor k/v scales (two floats per layer) are all the
		// extra an fp8 cache stores: nothing per token.
		c.KVElemBytes = 1
	case "bfloat16", "bf16", "float16", "fp16", "half":
		c.KVElemBytes = 2
	default:
		return nil, fmt.Errorf("engine.kv_cache_dtype: unknown %q (want auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16 or float16)", s.KVCacheDtype)
	}
	c.EP = 1
	if s.ExpertParallel && m.Arch.IsMoE() {
		c.EP = m.TP * max(1, s.DataParallel)
		if c.EP > m.Arch.MoE.Experts {
			return nil, fmt.Errorf("engine.enable_expert_parallel: %d GPUs for %d experts; at most one GPU per expert", c.EP, m.Arch.MoE.Experts)
		}
	}
	if s.MaxModelLen > 0 {
		c.refLen = s.MaxModelLen
	}
	c.shape = shapeFor(m.Arch, m.TP, c.KVElemBytes)
	if m.Arch.Window > 0 {
		c.windowShape = c.shape
	}
	return &c, nil
}

// SameMemory reports whether m and o size memory alike: the same weights,
// KV cache and expert placement.
func (m *Model) SameMemory(o *Model) bool {
	return m.Prec == o.Prec && m.ExpertPrec == o.ExpertPrec && m.KVElemBytes == o.KVElemBytes && m.EP == o.EP &&
		m.layersPerToken() == o.layersPerToken()
}

// FitError explains why m leaves no KV cache on its GPU at util, with the
// numbers; nil when it does.
func (m *Model) FitError(util float64, maxBatchedTokens, maxNumSeqs int) error {
	if m.KVBudgetBytes(util, maxBatchedTokens, maxNumSeqs) > 0 {
		return nil
	}
	gib := float64(1 << 30)
	return fmt.Errorf("%s on %d× %s: weights %.1f GiB per GPU (%s) + activations and CUDA graphs %.1f GiB exceed %.1f GiB "+
		"(gpu_memory_utilization %.2f of %.1f GiB): no room for the KV cache; raise tensor_parallel_size or quantize",
		m.Arch.Name, m.TP, m.GPU.Description, m.WeightBytesPerGPU()/gib, m.precisionName(), m.ReserveBytes(maxBatchedTokens, maxNumSeqs)/gib,
		m.GPU.MemoryGiB*util, util, m.GPU.MemoryGiB)
}

// precisionName names the weights' formats.
func (m *Model) precisionName() string {
	if m.Arch.IsMoE() && m.ExpertPrec != m.Prec {
		return m.Prec.Name + ", experts " + m.ExpertPrec.Name
	}
	return m.Prec.Name
}
