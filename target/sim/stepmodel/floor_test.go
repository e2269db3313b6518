package stepmodel

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// floorBatches are the steps the floor property is checked on: decode
// batches of 1 to 1024 sequences at 128 to 64k tokens of context each
// (capped at 2M context tokens in a step), prefills of 1 to 16k tokens after
// prefixes of 0 to 64k, and mixed steps.
func floorBatches() []Batch {
	var out []Batch
	for _, seqs := range []int{1, 2, 8, 64, 256, 1024} {
		for _, ctx := range []int{128, 1024, 8192, 65536} {
			if seqs*ctx <= 1<<21 {
				out = append(out, Batch{DecodeSeqs: seqs, DecodeContext: seqs * ctx})
			}
		}
	}
	for _, c := range []int{1, 16, 512, 2048, 16384} {
		for _, k := range []int{0, 8192, 65536} {
			out = append(out, Batch{Chunks: []Chunk{{Tokens: c, Prefix: k}}})
			out = append(out, Batch{Chunks: []Chunk{{Tokens: c, Prefix: k}}, DecodeSeqs: 64, DecodeContext: 64 * 2048})
		}
	}
	return out
}

// checkFloor fails t for every step of floorBatches that m computes faster
// than its physical floor.
func checkFloor(t *testing.T, name string, m *Model) int {
	t.Helper()
	n := 0
	for _, b := range floorBatches() {
		got, floor := m.StepMs(&b), m.FloorMs(&b)
		if !(got >= floor) {
			t.Errorf("%s: step %+v takes %.4f ms, below its floor %.4f ms", name, b, got, floor)
		}
		// The attention alone reads every context token's K and V: the
		// whole step's floor could hide a too-fast attention behind slow
		// linear layers.
		kv, _ := m.attentionWork(m.shape, &b, 0)
		if attn, kvFloor := m.attentionMs(m.shape, &b, 0), kv/m.GPU.bytesPerMs(); !(attn >= kvFloor) {
			t.Errorf("%s: attention of step %+v takes %.4f ms per layer, below reading its K and V (%.4f ms)", name, b, attn, kvFloor)
		}
		n++
	}
	return n
}

// Acceptance 3 of issue 29 (item 6): no step of any built-in profile, and of
// a grid of derived ones (every built-in model on every built-in GPU at TP
// 1-8 in every weight precision), is faster than the bytes it must read at
// the full HBM bandwidth or its FLOPs at the tensor-core peak.
func TestStepsNeverBeatThePhysicalFloor(t *testing.T) {
	t.Parallel()
	steps, models := 0, 0
	for _, e := range Catalogue() {
		steps += checkFloor(t, e.Name, e.Model)
		models++
	}
	for _, g := range gpus {
		for _, name := range slices.Sorted(maps.Keys(archs)) {
			for _, tp := range []int{1, 2, 4, 8} {
				m, err := NewModel(archs[name], g, tp)
				if err != nil {
					continue // no all-reduce table for this GPU and TP
				}
				for _, p := range weightFormats {
					steps += checkFloor(t, fmt.Sprintf("%s/%s/tp%d/%s", g.Name, name, tp, p.Name), m.WithPrecision(p))
					models++
				}
			}
		}
	}
	// The repository's MoE, MLA and sliding-window configs, with and
	// without expert parallelism, in their own precision and fp8.
	for _, file := range []string{"mixtral-8x7b.json", "qwen3-30b-a3b.json", "qwen3-235b-a22b.json", "deepseek-v3.json",
		"gpt-oss-120b.json", "llama-4-scout.json"} {
		a := readConfig(t, file)
		for _, g := range gpus {
			for _, tp := range []int{1, 2, 4, 8} {
				m, err := NewModel(a, g, tp)
				if err != nil {
					continue
				}
				for _, s := range []Setup{{}, {Quantization: "fp8", KVCacheDtype: "fp8"}, {ExpertParallel: true}, {ExpertParallel: true, DataParallel: 2}} {
					c, err := m.Configure(s)
					if err != nil {
						continue
					}
					steps += checkFloor(t, fmt.Sprintf("%s/%s/tp%d/%+v", g.Name, file, tp, s), c)
					models++
				}
			}
		}
	}
	t.Logf("%d models, %d steps: none below its floor", models, steps)
	if models < 100 {
		t.Errorf("only %d models checked", models)
	}
}
