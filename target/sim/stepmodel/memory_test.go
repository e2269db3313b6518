package stepmodel

import (
	"strings"
	"testing"
)

// Acceptance 4 of issue 29: an fp8 KV cache holds about twice the blocks
// of a bf16 one in the same memory (its per-tensor scales cost nothing per
// token), and halves the bytes a decode step's attention reads.
func TestFP8KVCacheDoublesTheBlocks(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"h100-llama3-8b", "a100-llama3-70b-tp4", "h200-qwen-72b-tp8"} {
		m, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		fp8, err := m.Configure(Setup{KVCacheDtype: "fp8"})
		if err != nil {
			t.Fatal(err)
		}
		seqs, batched := m.GPU.BatchDefaults()
		b16, b8 := m.KVBlocks(0.9, 16, batched, seqs), fp8.KVBlocks(0.9, 16, batched, seqs)
		ratio := float64(b8) / float64(b16)
		t.Logf("%s: %d blocks bf16, %d fp8 (×%.4f)", name, b16, b8, ratio)
		if ratio < 1.99 || ratio > 2.001 {
			t.Errorf("%s: fp8 KV gives %.4f× the blocks of bf16, want ~2", name, ratio)
		}
		b := Batch{DecodeSeqs: 64, DecodeContext: 64 * 16384}
		if a16, a8 := m.attentionMs(m.shape, &b, 0), fp8.attentionMs(fp8.shape, &b, 0); a8 > 0.55*a16 || a8 < 0.45*a16 {
			t.Errorf("%s: long-context decode attention %.4f ms fp8 vs %.4f bf16, want about half", name, a8, a16)
		}
	}
}

// Acceptance 4 of issue 29: MLA caches one latent per token for all heads,
// replicated on every tensor-parallel rank, so a rank's KV per token does
// not shrink as TP grows (GQA's does, down to one KV head per rank).
func TestMLAKVPerRankDoesNotShrinkWithTP(t *testing.T) {
	t.Parallel()
	ds := readConfig(t, "deepseek-v3.json")
	g, err := LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	var first float64
	for _, tp := range []int{1, 2, 4, 8} {
		m, err := NewModel(ds, g, tp)
		if err != nil {
			t.Fatal(err)
		}
		per := m.KVBytesPerTokenPerGPU()
		if tp == 1 {
			first = per
		}
		// 61 layers × (512 latent + 64 rope) × 2 bytes
		if per != first || per != 61*576*2 {
			t.Errorf("DeepSeek-V3 TP%d: %v KV bytes per token per GPU, want %v at every TP", tp, per, 61*576*2)
		}
	}
	gqa, _ := BuiltinArch("llama3-70b")
	m1, _ := NewModel(gqa, g, 1)
	m8, _ := NewModel(gqa, g, 8)
	if m8.KVBytesPerTokenPerGPU()*8 != m1.KVBytesPerTokenPerGPU() {
		t.Errorf("Llama-3-70B: TP8 holds %v KV bytes per token per GPU, TP1 %v: GQA should split by 8", m8.KVBytesPerTokenPerGPU(), m1.KVBytesPerTokenPerGPU())
	}
}

// Memory fit uses the real sizes: Llama-3.1-405B in its FP8 checkpoint fits
// 8× H100 (Meta's reference deployment) with room for KV; in bf16 it is
// refused with the numbers.
func TestLlama405BFP8FitsEightH100(t *testing.T) {
	t.Parallel()
	a := readConfig(t, "llama-3.1-405b-fp8.json")
	g, err := LookupGPU("h100")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(a, g, 8)
	if err != nil {
		t.Fatal(err)
	}
	seqs, batched := g.BatchDefaults()
	if err := m.FitError(0.9, batched, seqs); err != nil {
		t.Fatalf("405B FP8 on 8× H100: %v", err)
	}
	gib := m.WeightBytesPerGPU() / (1 << 30)
	tokens := m.KVBlocks(0.9, 16, batched, seqs) * 16
	t.Logf("405B FP8 TP8: %.1f GiB weights per GPU, %d tokens of KV", gib, tokens)
	if gib < 46 || gib > 49 || tokens < 131072 {
		t.Errorf("405B FP8 TP8: %.1f GiB of weights per GPU (want ~47.6: 1 byte per weight, embeddings bf16), %d KV tokens (want >= 128k)", gib, tokens)
	}
	err = m.WithPrecision(BF16).FitError(0.9, batched, seqs)
	if err == nil || !strings.Contains(err.Error(), "weights 94.5 GiB per GPU") || !strings.Contains(err.Error(), "79.6 GiB") {
		t.Errorf("405B bf16 on 8× H100: %v, want a refusal naming 94.5 GiB of weights and the 79.6 GiB GPU", err)
	}
}
