package engine

import (
	"slices"
	"testing"
)

func TestArgsRendersSetFieldsInOrder(t *testing.T) {
	off := false
	c := Config{Model: "m", MaxNumSeqs: 64, MaxNumBatchedTokens: 4096, EnablePrefixCaching: &off,
		Quantization: "fp8", ExtraArgs: map[string]string{"kv_transfer_config": "{}", "enforce-eager": ""}}
	want := []string{"--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--no-enable-prefix-caching",
		"--quantization", "fp8", "--enforce-eager", "--kv-transfer-config", "{}"}
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
