package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
)

// derivedModels are issue 29's acceptance-2 deployments: each repository
// config on the GPUs and engine settings it is served with.
var derivedModels = []struct {
	config, gpu, engine string
}{
	{"mixtral-8x7b.json", "h100", "tensor_parallel_size: 2"},
	{"qwen3-30b-a3b.json", "h100", "tensor_parallel_size: 1"},
	{"qwen3-235b-a22b.json", "h100", "tensor_parallel_size: 8\n    enable_expert_parallel: true"},
	{"deepseek-v3.json", "h200", "tensor_parallel_size: 8"},  // MLA, FP8 (the checkpoint's), 8x H200
	{"gpt-oss-120b.json", "h100", "tensor_parallel_size: 1"}, // MXFP4 experts
	{"llama-4-scout.json", "h100", "tensor_parallel_size: 4\n    kv_cache_dtype: fp8"},
}

// derivedSpec is a 200-request trial of one derived deployment.
func derivedSpec(t *testing.T, config, gpu, eng string) string {
	t.Helper()
	cfg, err := filepath.Abs(filepath.Join("..", "target", "sim", "configs", config))
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	writeFile(t, spec, fmt.Sprintf(`name: derived-%s
seed: 7
target:
  kind: sim
  model_config: %s
  gpu: %s
topology:
  replicas: 1
  engine:
    model: %s
    %s
workload:
  kind: random
  num_prompts: 200
  input_len: 256
  output_len: 24
  arrival:
    kind: poisson
    request_rate: 50
warmup:
  requests: 0
`, strings.TrimSuffix(config, ".json"), cfg, gpu, strings.TrimSuffix(config, ".json"), eng))
	return spec
}

// Acceptance 1 and 2 of issue 29: a spec with model_config and gpu runs
// under the real and the virtual clock, for each of the six MoE / MLA /
// quantized models; every request completes and the row records the
// derived profile's content hash and provenance.
func TestDerivedModelsRunUnderBothClocks(t *testing.T) {
	t.Parallel()
	for _, m := range derivedModels {
		t.Run(strings.TrimSuffix(m.config, ".json"), func(t *testing.T) {
			t.Parallel()
			spec := derivedSpec(t, m.config, m.gpu, m.engine)
			for _, clock := range []string{"virtual", "real"} {
				db := filepath.Join(t.TempDir(), "ledger.db")
				code, out, errs := run(t, "trial", "run", spec, "--ledger", db, "--clock", clock,
					"--max-schedule-delay", noOverload, "--max-engine-lag-ratio", noLag)
				if code != ExitOK {
					t.Fatalf("%s clock: exit %d\n%s\n%s", clock, code, out, errs)
				}
				l, err := ledger.Open(context.Background(), db)
				if err != nil {
					t.Fatal(err)
				}
				tr, err := l.Get(context.Background(), 1)
				l.Close()
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s clock: %d completed, mean TTFT %.1f ms, mean TPOT %.2f ms; hardware %s", clock, tr.Completed, tr.MeanTTFTMs, tr.MeanTPOTMs, tr.Hardware)
				if tr.Completed != 200 {
					t.Errorf("%s clock: %d of 200 requests completed", clock, tr.Completed)
				}
				if hc := string(tr.HardwareConfig); !strings.Contains(hc, `"content_hash":"`) || !strings.Contains(hc, `"provenance":"step model`) {
					t.Errorf("%s clock: hardware_config %s lacks the profile's content hash and provenance", clock, hc)
				}
			}
		})
	}
}

// Acceptance 1 of issue 29: trial validate refuses a derived model that
// does not fit its GPUs, naming the weights, the rest and the GPU memory,
// and accepts Llama-3.1-405B FP8 on 8x H100.
func TestTrialValidateChecksTheMemoryFit(t *testing.T) {
	t.Parallel()
	tooBig := derivedSpec(t, "qwen3-235b-a22b.json", "h100", "tensor_parallel_size: 2")
	code, out, errs := run(t, "trial", "validate", tooBig)
	if code != ExitUsage || !strings.Contains(errs, "target.model_config") || !strings.Contains(errs, "weights 218.9 GiB per GPU (bf16)") ||
		!strings.Contains(errs, "exceed 71.6 GiB (gpu_memory_utilization 0.90 of 79.6 GiB)") {
		t.Errorf("Qwen3-235B on 2x H100: exit %d, want %d naming the weights and the GPU memory\n%s\n%s", code, ExitUsage, out, errs)
	}
	fits := derivedSpec(t, "llama-3.1-405b-fp8.json", "h100", "tensor_parallel_size: 8")
	if code, out, errs := run(t, "trial", "validate", fits); code != ExitOK {
		t.Errorf("Llama-3.1-405B FP8 on 8x H100: exit %d, want %d\n%s\n%s", code, ExitOK, out, errs)
	}
}

// Acceptance 1 of issue 29: search varies a derived deployment's GPU type,
// tensor and expert parallelism and KV dtype; every candidate is derived
// for its own settings and recorded as a virtual row.
func TestSearchVariesDerivedDeployments(t *testing.T) {
	t.Parallel()
	spec := derivedSpec(t, "qwen3-30b-a3b.json", "h100", "tensor_parallel_size: 1")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, spec, strings.Replace(string(data), "num_prompts: 200", "num_prompts: 40", 1)+`search:
  space:
    target.gpu: [h100, h200, mi300x]
    topology.engine.tensor_parallel_size: [1, 2]
    topology.engine.enable_expert_parallel: [false, true]
    topology.engine.kv_cache_dtype: [auto, fp8]
  objective:
    maximize: output_throughput
`)
	db := filepath.Join(t.TempDir(), "ledger.db")
	if code, out, errs := run(t, "search", spec, "--ledger", db); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	l, err := ledger.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hashes := map[string]bool{}
	for id := int64(1); ; id++ {
		tr, err := l.Get(context.Background(), id)
		if err != nil {
			break
		}
		var hc struct {
			Hash string `json:"content_hash"`
		}
		if err := json.Unmarshal(tr.HardwareConfig, &hc); err != nil || hc.Hash == "" {
			t.Fatalf("row %d: hardware_config %s: %v", id, tr.HardwareConfig, err)
		}
		hashes[tr.Hardware+" "+hc.Hash] = true
	}
	// 3 GPUs x 2 TP x 2 EP x 2 KV dtypes; EP changes nothing at TP1.
	if len(hashes) < 18 {
		t.Errorf("%d distinct derived profiles recorded, want at least 18: %v", len(hashes), hashes)
	}
}

// autoinfer sim profile derive writes a profile file a spec's
// target.profile_file runs; a model that does not fit is refused.
func TestSimProfileDeriveWritesARunnableProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "gpt-oss.yaml")
	code, out, errs := run(t, "sim", "profile", "derive", "--model-config", "../target/sim/configs/gpt-oss-120b.json", "--gpu", "h100",
		"--model", "gpt-oss-120b", "--kv-cache-dtype", "fp8", "--out", file)
	if code != ExitOK {
		t.Fatalf("derive: exit %d\n%s\n%s", code, out, errs)
	}
	spec := filepath.Join(dir, "spec.yaml")
	writeFile(t, spec, fmt.Sprintf(`name: from-file
target:
  kind: sim
  profile_file: %s
topology:
  engine:
    model: gpt-oss-120b
workload:
  kind: random
  num_prompts: 20
  input_len: 128
  output_len: 8
  arrival:
    kind: poisson
    request_rate: 20
warmup:
  requests: 0
`, file))
	if code, out, errs := run(t, "trial", "run", spec, "--ledger", filepath.Join(dir, "l.db"), "--clock", "virtual"); code != ExitOK {
		t.Errorf("trial run with the profile file: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = run(t, "sim", "profile", "derive", "--model-config", "../target/sim/configs/deepseek-v3.json", "--gpu", "h100", "--model", "ds")
	if code != ExitUsage || !strings.Contains(errs, "weights 626.7 GiB per GPU (fp8)") {
		t.Errorf("DeepSeek-V3 on one H100: exit %d, want %d naming its weights\n%s", code, ExitUsage, errs)
	}
}
