package stepmodel

import "testing"

// A weight format sets the bytes a GEMM reads and the rate it runs at:
// memory-bound decode follows the bytes on every GPU; compute-bound prefill
// follows the tensor cores, so FP8 is W8A16 on an A100 (no faster than
// bf16) and native on an H100, and FP4 runs at the FP4 rate only on
// Blackwell.
func TestWeightFormatsSetBytesAndRate(t *testing.T) {
	t.Parallel()
	a, _ := BuiltinArch("llama3-70b")
	linear := func(gpu, format string, tokens float64) float64 {
		g, err := LookupGPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewModel(a, g, 4)
		if err != nil {
			t.Fatal(err)
		}
		p, err := LookupPrecision(format)
		if err != nil {
			t.Fatal(err)
		}
		return m.WithPrecision(p).LinearMs(tokens)
	}
	for _, c := range []struct {
		name     string
		got      float64
		min, max float64
	}{
		{"h100 decode fp8/bf16", linear("h100", "fp8", 1) / linear("h100", "bf16", 1), 0.45, 0.75},
		{"a100 decode fp8/bf16 (W8A16 still reads half)", linear("a100", "fp8", 1) / linear("a100", "bf16", 1), 0.45, 0.75},
		{"h100 decode int4/fp8", linear("h100", "awq", 1) / linear("h100", "fp8", 1), 0.45, 0.85},
		{"h100 prefill fp8/bf16 (native fp8)", linear("h100", "fp8", 8192) / linear("h100", "bf16", 8192), 0.45, 0.70},
		{"a100 prefill fp8/bf16 (W8A16: bf16 rate)", linear("a100", "fp8", 8192) / linear("a100", "bf16", 8192), 0.90, 1.0},
		{"h100 prefill mxfp4/bf16 (no fp4: bf16 rate)", linear("h100", "mxfp4", 8192) / linear("h100", "bf16", 8192), 0.85, 1.0},
		{"b200 prefill nvfp4/bf16 (native fp4)", linear("b200", "nvfp4", 8192) / linear("b200", "bf16", 8192), 0.2, 0.45},
	} {
		t.Logf("%-45s %.3f", c.name, c.got)
		if c.got < c.min || c.got > c.max {
			t.Errorf("%s: ratio %.3f, want in [%.2f, %.2f]", c.name, c.got, c.min, c.max)
		}
	}
	if _, err := LookupPrecision("fp3"); err == nil {
		t.Error("an unknown weight format was accepted")
	}
}
