package engine

import (
	"slices"
	"testing"
)

func TestArgsRendersSetFieldsInOrder(t *testing.T) {
	off, on := false, true
	c := Config{Model: "m", MaxNumSeqs: 64, MaxNumBatchedTokens: 4096, EnablePrefixCaching: &off,
		Quantization: "fp8", KVCacheDtype: "fp8", EnableExpertParallel: true, AsyncScheduling: &on,
		ExtraArgs: map[string]string{"kv_transfer_config": "{}", "enforce-eager": ""}}
	want := []string{"--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--no-enable-prefix-caching",
		"--quantization", "fp8", "--kv-cache-dtype", "fp8", "--enable-expert-parallel", "--async-scheduling",
		"--enforce-eager", "--kv-transfer-config", "{}"}
	if got := c.Args(); !slices.Equal(got, want) {
		t.Fatalf("Args() = %v\nwant     %v", got, want)
	}
}

func TestHashDistinguishesConfigs(t *testing.T) {
	a, err := Config{Model: "m", MaxNumSeqs: 64}.Hash()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Config{Model: "m", MaxNumSeqs: 64}.Hash()
	c, _ := Config{Model: "m", MaxNumSeqs: 128}.Hash()
	if a != b || a == c {
		t.Fatalf("hashes: equal configs %s/%s, different config %s", a, b, c)
	}
}

// Validate reports every bad field at once, each by its YAML key.
func TestValidateNamesEveryField(t *testing.T) {
	if err := (Config{Model: "m", GPUMemoryUtilization: 0.9}).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	err := Config{MaxNumSeqs: -1, DataParallelSize: -2, GPUMemoryUtilization: 1.5}.Validate()
	want := "model: required\nmax_num_seqs: must be ≥ 0 (got -1)\ndata_parallel_size: must be ≥ 0 (got -2)\ngpu_memory_utilization: must be ≤ 1 (got 1.5)"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() =\n%v\nwant\n%s", err, want)
	}
}
