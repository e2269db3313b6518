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
	// Prec is the weights' precision (ExpertPrec the routed experts');
	// linear layers measured in bf16 are scaled by the derived ratio for
	// another one.
	Prec, ExpertPrec Precision
	// KVElemBytes is the KV cache's bytes per element (2: bf16, 1: fp8).
	KVElemBytes float64
	// EP is the expert-parallel size: the GPUs a MoE layer's experts are
	// spread over (1: every GPU holds every expert, split over TP).
	EP int
	// refLen is the sequence length window layers' KV is sized for
	// (max_model_len).
	refLen int
	// Measured is true when the linear layers come from a measured table,
	// false when derived from the architecture.
	Measured bool
	// Source says where every part comes from; MeasuredError what the
	// golden tests found (see docs/sim.md).
	Source, MeasuredError string

	table Table
	eff   Efficiency
	attn  AttentionFit
	shape attnShape
	// windowShape is the sliding-window layers' attention (zero: none).
	windowShape attnShape
	allReduce   Table
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

// defaultRefLen is vLLM's and the simulated engine's max_model_len when a
// config sets none here (8192).
const defaultRefLen = 8192

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
	m := &Model{Name: a.Name, GPU: g, Arch: a, TP: tp, Prec: BF16, ExpertPrec: BF16, KVElemBytes: 2, EP: 1, refLen: defaultRefLen,
		eff: e, attn: attention, shape: shapeOf(a, tp)}
	if a.Quantization != "" {
		p, err := LookupPrecision(a.Quantization)
		if err != nil {
			return nil, fmt.Errorf("config.json quantization_config: %w", err)
		}
		m.ExpertPrec = p
		if !a.ExpertsOnly {
			m.Prec = p
		}
	}
	if a.Window > 0 {
		m.windowShape = m.shape
	}
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

// WithPrecision is m with weights of another precision (all of them,
// experts included).
func (m *Model) WithPrecision(p Precision) *Model {
	c := *m
	c.Prec, c.ExpertPrec = p, p
	return &c
}

// LinearMs is one dense block's linear layers for t tokens.
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

// moeLinearMs is one MoE block's linear layers and expert dispatch for t
// tokens of this rank: with expert parallelism the tokens go to the GPUs
// holding their experts and back (two all-to-alls of the hidden states
// of each token's top-k picks, over the GPU interconnect).
func (m *Model) moeLinearMs(t float64) float64 {
	if t <= 0 {
		return 0
	}
	tAll := t * float64(m.EP) / float64(m.TP)
	ms := m.eff.moeLayerMs(m.Arch, m.GPU, m.Prec, m.ExpertPrec, m.TP, m.EP, t, max(t, tAll))
	if m.EP > 1 {
		bytes := t * float64(m.Arch.MoE.TopK*m.Arch.Hidden) * 2 * float64(m.EP-1) / float64(m.EP)
		ms += 2 * (bytes/(m.GPU.LinkGBps*1e6) + m.GPU.CollectiveUs/1e3)
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

// BlockMs is one dense transformer block's GPU time for b, the part
// vidur's summation covers. The linear layers and all-reduces are looked up
// at the step's padded token count (paddedTokens).
func (m *Model) BlockMs(b *Batch) float64 {
	t := paddedTokens(b.Tokens())
	return m.LinearMs(t) + 2*m.allReduceMs(t) + m.attentionMs(m.shape, b, 0)
}

// attentionMs is one layer's attention for b; window > 0 caps every
// sequence's context at that many tokens (a sliding-window layer).
func (m *Model) attentionMs(s attnShape, b *Batch, window int) float64 {
	ctx := float64(b.DecodeContext)
	chunks := b.Chunks
	if window > 0 {
		ctx = min(ctx, float64(b.DecodeSeqs*window))
		capped := make([]Chunk, len(chunks))
		for i, c := range chunks {
			capped[i] = Chunk{Tokens: c.Tokens, Prefix: min(c.Prefix, window)}
		}
		chunks = capped
	}
	if len(chunks) == 0 {
		return m.attn.GraphDecodeMs(s, m.GPU, b.DecodeSeqs, ctx)
	}
	return m.attn.DecodeMs(s, m.GPU, b.DecodeSeqs, ctx) + m.attn.PrefillMs(s, m.GPU, chunks)
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
	a := m.Arch
	if !a.IsMoE() && a.WindowLayers == 0 {
		return float64(a.Layers)*m.BlockMs(b) + m.lmHeadMs(b.Seqs())
	}
	t := paddedTokens(b.Tokens())
	moe := a.MoELayers()
	ms := float64(a.Layers-moe)*(m.LinearMs(t)+2*m.allReduceMs(t)) + float64(a.fullLayers())*m.attentionMs(m.shape, b, 0)
	if moe > 0 {
		reduces := 2.0
		if m.EP > 1 {
			reduces = 1 // the experts' output returns by the all-to-all
		}
		ms += float64(moe) * (m.moeLinearMs(t) + reduces*m.allReduceMs(t))
	}
	if a.WindowLayers > 0 {
		ms += float64(a.WindowLayers) * m.attentionMs(m.windowShape, b, a.Window)
	}
	return ms + m.lmHeadMs(b.Seqs())
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

// WeightBytesPerGPU is the model's weights on one GPU: the dense parts
// split over TP, the routed experts over TP or, with expert parallelism,
// over the EP GPUs; the embedding and LM head stay bf16.
func (m *Model) WeightBytesPerGPU() float64 {
	a := m.Arch
	experts := float64(a.MoELayers()*a.MoE.Experts) * a.expertParams()
	dense := a.Params() - experts - a.embParams()
	return (dense*m.Prec.WeightBytes+a.embParams()*2)/float64(m.TP) + experts*m.ExpertPrec.WeightBytes/float64(max(m.TP, m.EP))
}

// KVBytesPerToken is one token's KV across the TP group (one copy of
// MLA's latent): the full-attention layers', and the window layers' in the
// share windowShare of a sequence's tokens they keep.
func (m *Model) KVBytesPerToken() float64 {
	return m.layersPerToken() * m.Arch.kvElems() * m.KVElemBytes
}

// KVBytesPerTokenPerGPU is what one token's KV takes on each GPU: GQA's
// heads split over TP (at least one each), MLA's latent whole on every GPU.
func (m *Model) KVBytesPerTokenPerGPU() float64 { return m.layersPerToken() * m.shape.kvBytesPerToken }

// layersPerToken is the layers a cached token occupies on average: every
// full-attention layer, and a sliding-window layer for the Window most
// recent tokens of a sequence, which at max_model_len is Window of them
// (vLLM's hybrid allocator frees a window layer's blocks that fall out of
// the window).
func (m *Model) layersPerToken() float64 {
	a := m.Arch
	if a.WindowLayers == 0 {
		return float64(a.Layers)
	}
	return float64(a.fullLayers()) + float64(a.WindowLayers)*min(1, float64(a.Window)/float64(m.refLen))
}

// KVBlocks is the KV capacity in blocks of blockSize tokens per GPU memory
// after weights at gpu_memory_utilization util, as vLLM sizes it; reserve
// is the activation and CUDA-graph memory vLLM's profiling run finds, here
// estimated (see docs/sim.md). Zero when the weights do not fit.
func (m *Model) KVBlocks(util float64, blockSize, maxBatchedTokens, maxNumSeqs int) int {
	budget := m.KVBudgetBytes(util, maxBatchedTokens, maxNumSeqs)
	if budget <= 0 {
		return 0
	}
	return int(math.Floor(budget / (m.KVBytesPerTokenPerGPU() * float64(blockSize))))
}

// KVBudgetBytes is the memory one GPU has left for the KV cache: util of
// its memory less the weights and the reserve (negative: the weights do
// not fit).
func (m *Model) KVBudgetBytes(util float64, maxBatchedTokens, maxNumSeqs int) float64 {
	return m.GPU.MemoryGiB*(1<<30)*util - m.WeightBytesPerGPU() - m.ReserveBytes(maxBatchedTokens, maxNumSeqs)
}

// ReserveBytes estimates the non-KV, non-weight memory of a vLLM worker: a
// fixed 1 GiB (CUDA context, CUDA graphs, allocator slack) plus the peak
// activations of a max_num_batched_tokens forward pass (the widest MLP's
// intermediate, bf16) and max_num_seqs rows of fp32 logits.
func (m *Model) ReserveBytes(maxBatchedTokens, maxNumSeqs int) float64 {
	width := m.Arch.mlpWidth()
	if m.Arch.IsMoE() {
		width = max(width, m.Arch.MoE.TopK*m.Arch.gatedWidth(m.Arch.MoE.ExpertIntermediate))
	}
	act := float64(maxBatchedTokens) * float64(width) / float64(m.TP) * 2
	logits := float64(maxNumSeqs) * float64(m.Arch.Vocab) / float64(m.TP) * 4
	return float64(1<<30) + act + logits
}
