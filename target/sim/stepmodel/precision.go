package stepmodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rate is the tensor-core rate a GEMM runs at: its activations' type.
type Rate int

// Rates. A GPU without the tensor cores for a rate runs the GEMM at its
// bf16 rate with the weights dequantized in the kernel (W8A16, W4A16: vLLM's
// Marlin kernels for FP8 and INT4 on Ampere, Triton's for MXFP4 on Hopper).
const (
	RateBF16 Rate = iota
	RateFP8
	RateINT8
	RateFP4
)

// Precision is how a model's weights are stored: the bytes one weight takes
// with its share of the scales, and the rate its GEMMs run at.
type Precision struct {
	Name        string
	WeightBytes float64
	Rate        Rate
}

// BF16 is the precision vidur measured.
var BF16 = Precision{Name: "bf16", WeightBytes: 2, Rate: RateBF16}

// weightFormats are the formats a step model knows, with the scale bytes
// their layouts add: fp8 block scales (one fp32 per 128×128) are
// negligible; AWQ/GPTQ INT4 one fp16 scale and a 4-bit zero per group of
// 128; MXFP4 one 8-bit scale per 32 (OCP MX); NVFP4 one fp8 scale per 16.
var weightFormats = []Precision{
	BF16,
	{Name: "fp8", WeightBytes: 1, Rate: RateFP8},
	{Name: "int8", WeightBytes: 1, Rate: RateINT8},
	{Name: "int4", WeightBytes: 0.5 + 2.5/128, Rate: RateBF16},
	{Name: "mxfp4", WeightBytes: 0.5 + 1.0/32, Rate: RateFP4},
	{Name: "nvfp4", WeightBytes: 0.5 + 1.0/16, Rate: RateFP4},
}

// quantizationFormats maps vLLM's --quantization names (and config.json's
// quant_method) to a weight format.
var quantizationFormats = map[string]string{
	"": "bf16", "bf16": "bf16", "bfloat16": "bf16", "fp16": "bf16", "float16": "bf16", "auto": "bf16",
	"fp8": "fp8", "fbgemm_fp8": "fp8", "ptpc_fp8": "fp8", "modelopt": "fp8", "compressed-tensors": "fp8", "fp8_e4m3": "fp8",
	"int8": "int8", "w8a8": "int8", "smoothquant": "int8", "experts_int8": "int8",
	"int4": "int4", "awq": "int4", "awq_marlin": "int4", "gptq": "int4", "gptq_marlin": "int4", "bitsandbytes": "int4", "gguf": "int4",
	"mxfp4": "mxfp4",
	"nvfp4": "nvfp4", "modelopt_fp4": "nvfp4",
}

// LookupPrecision finds a weight format by its name or a vLLM
// quantization method's.
func LookupPrecision(name string) (Precision, error) {
	f, ok := quantizationFormats[strings.ToLower(name)]
	if !ok {
		known := slices.DeleteFunc(slices.Sorted(maps.Keys(quantizationFormats)), func(k string) bool { return k == "" })
		return Precision{}, fmt.Errorf("unknown weight format %q (known: %s)", name, strings.Join(known, ", "))
	}
	for _, p := range weightFormats {
		if p.Name == f {
			return p, nil
		}
	}
	return Precision{}, fmt.Errorf("weight format %q has no entry", f)
}

// peakPerMs is g's dense tensor-core peak in FLOPs per millisecond at rate
// r, its bf16 peak where it has no such tensor cores.
func (g GPU) peakPerMs(r Rate) float64 {
	tf := g.BF16TFLOPS
	switch {
	case r == RateFP8 && g.FP8TFLOPS > 0:
		tf = g.FP8TFLOPS
	case r == RateINT8 && g.INT8TOPS > 0:
		tf = g.INT8TOPS
	case r == RateFP4 && g.FP4TFLOPS > 0:
		tf = g.FP4TFLOPS
	}
	return tf * 1e9
}
