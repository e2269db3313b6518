package stepmodel

import (
	"os"
	"testing"
)

// readConfig reads one of the repository's model configs.
func readConfig(t *testing.T, file string) Arch {
	t.Helper()
	data, err := os.ReadFile("../configs/" + file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ArchFromHFConfig(file, data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return a
}

// The configs in the repository read as the architectures their sources
// state: total and active parameters within a few percent of the published
// figures, and the family's MoE, MLA and window fields.
func TestConfigsReadAsPublishedArchitectures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file           string
		total, active  float64 // published, billions (0: not published)
		moe, mla, wind bool
		quant          string
	}{
		{"mixtral-8x7b.json", 46.7, 12.9, true, false, false, ""},
		{"qwen3-30b-a3b.json", 30, 3, true, false, false, ""},
		{"qwen3-235b-a22b.json", 235, 22, true, false, false, ""},
		{"deepseek-v3.json", 671, 37, true, true, false, "fp8"},
		{"gpt-oss-120b.json", 117, 5.1, true, false, true, "mxfp4"},
		{"llama-4-scout.json", 109, 17, true, false, true, ""},
		{"llama-3.1-405b-fp8.json", 405, 405, false, false, false, "fbgemm_fp8"},
	} {
		a := readConfig(t, c.file)
		total, active := a.Params()/1e9, a.ActiveParams()/1e9
		t.Logf("%-24s %7.1fB total (published %g), %6.1fB active (%g); %d MoE layers, window %d on %d layers",
			c.file, total, c.total, active, c.active, a.MoELayers(), a.Window, a.WindowLayers)
		// The parameter counts leave out vision towers (Llama-4),
		// multi-token prediction (DeepSeek) and per-head norms, so allow
		// 8 %; the names round (30B, 3B) more than that for Qwen3-30B.
		tol := 0.08
		if c.file == "qwen3-30b-a3b.json" {
			tol = 0.12
		}
		if d := total/c.total - 1; d > tol || d < -tol {
			t.Errorf("%s: %.1fB parameters, published %gB", c.file, total, c.total)
		}
		if d := active/c.active - 1; d > tol+0.05 || d < -tol-0.05 {
			t.Errorf("%s: %.1fB active parameters, published %gB", c.file, active, c.active)
		}
		if a.IsMoE() != c.moe || a.IsMLA() != c.mla || (a.WindowLayers > 0) != c.wind || a.Quantization != c.quant {
			t.Errorf("%s: moe %v mla %v window %d quantization %q; want %v %v %v %q", c.file, a.IsMoE(), a.IsMLA(), a.WindowLayers, a.Quantization,
				c.moe, c.mla, c.wind, c.quant)
		}
	}
}
