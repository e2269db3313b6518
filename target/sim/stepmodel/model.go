package stepmodel

import (
	"fmt"
	"math"
	"sync"
)

// Model is the step-time model of one engine (one TP group) serving one
// model on one GPU type. A step's GPU time is, per transformer block, the
// linear layers at the step's total token count (interpolated from vidur's
// measured table, or derived from the architecture), decode attention over
// the decoding sequences' context, prefill attention over the chunks and
// their cached prefixes, and with tensor parallelism two all-reduces of the
// hidden states (vidur's measured NCCL times); times the blocks, plus the LM
// head over the sampled sequences. CPU overhead is not in the Model: the
// profile adds it (see sim.Profile).
type Model struct {
	Name string
	GPU  GPU
	Arch Arch
	TP   int
	// Prec is the weights' precision; linear layers measured in bf16 are
	// scaled by the derived ratio for another one.
	Prec Precision
	// Measured is true when the linear layers come from a measured table,
	// false when derived from the architecture.
	Measured bool
	// Source says where every part comes from; MeasuredError what the
	// golden tests found (see docs/sim.md).
	Source, MeasuredError string

	table     Table
	eff       Efficiency
	attn      AttentionFit
	shape     attnShape
	allReduce Table
	// lmHead tabulates the LM head's time per sequence count on first use
	// (its two powers per GEMM were most of a step's modelling cost, and
	// the count takes few values). Copies (WithPrecision) share it: the LM
	// head runs in bf16 whatever the weights' precision, and the fields it
	// reads are not changed after NewModel.
	lmHead *lmHeadTable
}

// lmHeadTable is a Model's LM head time for 0…lmHeadTable sequences.
type lmHeadTable struct {
	once sync.Once
	ms   []float64
}

// lmHeadSeqs is the largest sequence count tabulated; larger batches
// compute the LM head per step.
const lmHeadSeqs = 1024

// NewModel builds the model of arch on tp GPUs g, from the measured table
// when one exists for (g, model, tp), else derived from the architecture
// with g's fitted efficiencies.
func NewModel(a Arch, g GPU, tp int) (*Model, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if tp < 1 || a.Heads%tp != 0 {
		return nil, fmt.Errorf("tensor_parallel_size: %d must divide num_attention_heads %d", tp, a.Heads)
	}
	e, ok := efficiencies[g.efficiencyGPU()]
	if !ok {
		return nil, fmt.Errorf("GPU %s: no fitted efficiencies for %s", g.Name, g.efficiencyGPU())
	}
	m := &Model{Name: a.Name, GPU: g, Arch: a, TP: tp, Prec: BF16, eff: e, attn: attention, shape: shapeOf(a, tp)}
	if tp > 1 {
		if g.Network == "" {
			return nil, fmt.Errorf("GPU %s: no all-reduce measurements, tensor parallelism is not modelled", g.Name)
		}
		t, ok := allReduceTables[allReduceKey(g.Network, tp)]
		if !ok {
			return nil, fmt.Errorf("GPU %s: no all-reduce measurements for %d GPUs", g.Name, tp)
		}
		m.allReduce = t
	}
	// A measured table applies only to the exact shape it was measured
	// for, whatever the caller named its model.
	if t, ok := linearTables[PairKey{g.Name, a.Name, tp}]; ok && archs[a.Name] == a {
		m.table, m.Measured = t, true
	}
	m.Source = m.describe()
	m.lmHead = &lmHeadTable{}
	return m, nil
}

func (m *Model) describe() string {
	lin := fmt.Sprintf("linear layers derived from the architecture with %s's fitted efficiencies", m.GPU.efficiencyGPU())
	if m.Measured {
		lin = fmt.Sprintf("linear layers measured (vidur %s %s TP%d)", m.GPU.Name, m.Arch.Name, m.TP)
	}
	attn := "attention derived from A100 Llama-3-8B measurements scaled by bandwidth and FLOP/s"
	if m.GPU.Name == "a100" && m.shape == shapeOf(attentionArch, 1) {
		attn = "attention fitted on measured rows (vidur A100 Llama-3-8B)"
	}
	src := lin + "; " + attn
	if m.TP > 1 {
		src += fmt.Sprintf("; all-reduce measured (vidur %s)", m.GPU.Network)
	}
	return src
}

// WithPrecision is m with weights of another precision.
func (m *Model) WithPrecision(p Precision) *Model {
	c := *m
	c.Prec = p
	return &c
}

// LinearMs is one block's linear layers for t tokens.
func (m *Model) LinearMs(t float64) float64 {
	if t <= 0 {
		return 0
	}
	if !m.Measured {
		return m.eff.layerMs(m.Arch, m.GPU, m.Prec, m.TP, t)
	}
	ms := m.table.Eval(t)
	if m.Prec != BF16 {
		ms *= m.eff.layerMs(m.Arch, m.GPU, m.Prec, m.TP, t) / m.eff.layerMs(m.Arch, m.GPU, BF16, m.TP, t)
	}
	return ms
}

// allReduceMs is one all-reduce of t tokens' hidden states (bf16).
func (m *Model) allReduceMs(t float64) float64 {
	if m.TP == 1 || t <= 0 {
		return 0
	}
	return m.allReduce.Eval(t * float64(m.Arch.Hidden) * 2)
}

// BlockMs is one transformer block's GPU time for b, the part vidur's
// summation covers. The linear layers and all-reduces are looked up at the
// step's padded token count (paddedTokens).
func (m *Model) BlockMs(b *Batch) float64 {
	t := paddedTokens(b.Tokens())
	return m.LinearMs(t) + 2*m.allReduceMs(t) +
		m.attn.DecodeMs(m.shape, m.GPU, b.DecodeSeqs, float64(b.DecodeContext)) +
		m.attn.PrefillMs(m.shape, m.GPU, b.Chunks)
}

// paddedTokens is the token count a step's GEMMs run at. vLLM V1 replays
// CUDA graphs captured for 1, 2, 4 and then multiples of 8 tokens
// (cudagraph_capture_sizes), padding a step up to the next; vidur's rule
// rounds every count up to 8 (GEMM tiles), which would charge one
// sequence's decode the 8-token GEMMs vidur measured ~5 % slower than the
// 1-token ones.
func paddedTokens(n int) float64 {
	switch {
	case n <= 1:
		return 1
	case n <= 2:
		return 2
	case n <= 4:
		return 4
	}
	return math.Ceil(float64(n)/8) * 8
}

// StepMs is the step's GPU time: every block, plus the LM head over the
// sequences that sample in this step (every sequence in it; a mid-prompt
// chunk's logits are discarded but computed).
func (m *Model) StepMs(b *Batch) float64 {
	if b.Tokens() == 0 {
		return 0
	}
	return float64(m.Arch.Layers)*m.BlockMs(b) + m.lmHeadMs(b.Seqs())
}

func (m *Model) lmHeadMs(seqs int) float64 {
	if t := m.lmHead; t != nil && seqs <= lmHeadSeqs {
		t.once.Do(func() {
			t.ms = make([]float64, lmHeadSeqs+1)
			for s := range t.ms {
				t.ms[s] = m.eff.LMHeadMs(m.Arch, m.GPU, m.TP, s)
			}
		})
		return t.ms[seqs]
	}
	return m.eff.LMHeadMs(m.Arch, m.GPU, m.TP, seqs)
}

// WeightBytesPerGPU is the model's weights on one GPU of the TP group.
func (m *Model) WeightBytesPerGPU() float64 {
	return m.Arch.Params() * m.Prec.WeightBytes / float64(m.TP)
}

// KVBytesPerToken is one token's KV across the TP group.
func (m *Model) KVBytesPerToken() float64 { return m.Arch.KVBytesPerToken(2) }

// KVBlocks is the KV capacity in blocks of blockSize tokens per GPU memory
// after weights at gpu_memory_utilization util, as vLLM sizes it; reserve
// is the activation and CUDA-graph memory vLLM's profiling run finds, here
// estimated (see docs/sim.md). Zero when the weights do not fit.
func (m *Model) KVBlocks(util float64, blockSize, maxBatchedTokens, maxNumSeqs int) int {
	gib := float64(1 << 30)
	budget := m.GPU.MemoryGiB*gib*util - m.WeightBytesPerGPU() - m.reserveBytes(maxBatchedTokens, maxNumSeqs)
	perBlock := m.KVBytesPerToken() / float64(m.TP) * float64(blockSize)
	if budget <= 0 {
		return 0
	}
	return int(math.Floor(budget / perBlock))
}

// reserveBytes estimates the non-KV, non-weight memory of a vLLM worker: a
// fixed 1 GiB (CUDA context, CUDA graphs, allocator slack) plus the peak
// activations of a max_num_batched_tokens forward pass (the gated MLP's
// intermediate, bf16) and max_num_seqs rows of fp32 logits.
func (m *Model) reserveBytes(maxBatchedTokens, maxNumSeqs int) float64 {
	act := float64(maxBatchedTokens) * float64(m.Arch.mlpWidth()) / float64(m.TP) * 2
	logits := float64(maxNumSeqs) * float64(m.Arch.Vocab) / float64(m.TP) * 4
	return float64(1<<30) + act + logits
}
