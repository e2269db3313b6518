package stepmodel

import "math"

// FloorMs is the least GPU time step b can take on m's GPU whatever the
// kernels: the longer of reading the bytes it must read (every weight of
// the blocks, of the experts its tokens touch under uniform routing, and of
// the LM head once, and the K and V of every context token it attends to)
// at the full HBM bandwidth, and computing its FLOPs (the GEMMs at the
// weights' tensor-core peak, attention at the bf16 peak). The step model
// never goes below it (TestStepsNeverBeatThePhysicalFloor).
func (m *Model) FloorMs(b *Batch) float64 {
	if b.Tokens() == 0 {
		return 0
	}
	a, tp := m.Arch, float64(m.TP)
	moe := float64(a.MoELayers())
	dense := float64(a.Layers) - moe
	t := float64(b.Tokens())
	head := float64(a.Hidden) * float64(a.Vocab) / tp

	// Weights: dense blocks, the MoE blocks' attention, shared experts and
	// router, the touched experts, the LM head (bf16).
	moeFixed := a.attnParams() + a.sharedParams() + float64(2*a.Hidden)
	bytes := (dense*a.LayerParams()+moe*moeFixed)*m.Prec.WeightBytes/tp + 2*head
	gemm := 2*t*(dense*a.LayerParams()+moe*moeFixed)/tp + 2*float64(b.Seqs())*head
	var expertGemm float64
	if moe > 0 {
		e, k := float64(a.MoE.Experts), float64(a.MoE.TopK)
		local, share, tokens := e, tp, t
		if m.EP > 1 {
			local, share, tokens = e/float64(m.EP), 1, math.Max(t, t*float64(m.EP)/tp)
		}
		touched := local * (1 - math.Pow(1-k/e, tokens))
		bytes += moe * touched * a.expertParams() * m.ExpertPrec.WeightBytes / share
		expertGemm = moe * 2 * t * k * a.expertParams() / tp
	}

	// Attention: K and V reads and FLOPs, full and sliding-window layers.
	kv, flops := m.attentionWork(m.shape, b, 0)
	kv, flops = kv*float64(a.fullLayers()), flops*float64(a.fullLayers())
	if a.WindowLayers > 0 {
		wkv, wflops := m.attentionWork(m.windowShape, b, a.Window)
		kv += wkv * float64(a.WindowLayers)
		flops += wflops * float64(a.WindowLayers)
	}
	compute := gemm/m.GPU.peakPerMs(m.Prec.Rate) + expertGemm/m.GPU.peakPerMs(m.ExpertPrec.Rate) + flops/m.GPU.flopsPerMs()
	return max((bytes+kv)/m.GPU.bytesPerMs(), compute)
}

// attentionWork is one layer's K and V bytes read and attention FLOPs for
// b, every sequence's context capped at window (0: none).
func (m *Model) attentionWork(s attnShape, b *Batch, window int) (bytes, flops float64) {
	ctx := float64(b.DecodeContext)
	if window > 0 {
		ctx = min(ctx, float64(b.DecodeSeqs*window))
	}
	bytes, flops = ctx*s.kvBytesPerToken, ctx*s.decodeFlops
	for _, c := range b.Chunks {
		k := c.Prefix
		if window > 0 {
			k = min(k, window)
		}
		bytes += float64(k+c.Tokens) * s.kvBytesPerToken
		flops += s.flopUnit * float64(c.Tokens*c.Tokens+2*c.Tokens*k)
	}
	return bytes, flops
}
