package sim

import (
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/target/mixhash"
)

// precision is how far an engine's numerics sit from the full-precision
// reference: logprob noise and a fraction of tokens flipped to the runner-up.
// The reference (bf16/fp16/fp32/auto, no quantization) has both at zero, so a
// quality gate comparing top-k logprobs sees quantized deployments drift.
type precision struct {
	name  string
	flip  float64 // fraction of positions whose top-1 and top-2 swap
	noise float64 // max absolute logit perturbation (below the smallest gap)
	salt  uint64  // which positions flip: differs per precision setting
}

// quantizationEffect is a coarse table of how much each scheme perturbs.
// The figures are not measurements: they are ordered like published
// accuracy losses (fp8 < int8 < 4-bit) and large enough for a gate to see.
var quantizationEffect = map[string][2]float64{ // name → {flip, noise}
	"fp8": {0.02, 0.05}, "fbgemm_fp8": {0.02, 0.05}, "modelopt": {0.02, 0.05},
	"int8": {0.03, 0.08}, "w8a8": {0.03, 0.08}, "smoothquant": {0.03, 0.08}, "experts_int8": {0.03, 0.08},
	"awq": {0.06, 0.15}, "awq_marlin": {0.06, 0.15}, "gptq": {0.06, 0.15}, "gptq_marlin": {0.06, 0.15},
	"bitsandbytes": {0.08, 0.2}, "gguf": {0.06, 0.15}, "int4": {0.08, 0.2},
}

// fullPrecision dtypes all count as the reference.
var fullPrecision = map[string]bool{"": true, "auto": true, "bfloat16": true, "bf16": true,
	"float16": true, "fp16": true, "half": true, "float32": true, "fp32": true, "float": true}

func precisionOf(dtype, quantization string, flipOverride *float64) (precision, error) {
	dtype, quantization = strings.ToLower(dtype), strings.ToLower(quantization)
	p := precision{name: "reference"}
	switch {
	case quantization != "":
		eff, ok := quantizationEffect[quantization]
		if !ok {
			eff = [2]float64{0.05, 0.12} // an unknown scheme is assumed 4–8 bit
		}
		p = precision{name: quantization, flip: eff[0], noise: eff[1]}
	case !fullPrecision[dtype]:
		if dtype != "fp8" && dtype != "float8" && dtype != "fp8_e4m3" && dtype != "fp8_e5m2" {
			return precision{}, fmt.Errorf("engine.dtype: unknown dtype %q (want auto, bfloat16, float16, float32 or fp8)", dtype)
		}
		p = precision{name: dtype, flip: 0.02, noise: 0.05}
	}
	if flipOverride != nil {
		f := *flipOverride
		if f < 0 || f > 1 || f != f {
			return precision{}, fmt.Errorf("flip_rate: must be in [0, 1], got %v", f)
		}
		p.flip = f
		if f > 0 && p.noise == 0 {
			p.noise = 0.05
		}
	}
	if p.flip > 0 || p.noise > 0 {
		p.salt = mixhash.Mix64(mixhash.FNV64a(p.name) ^ 0x5eed)
	}
	return p, nil
}
