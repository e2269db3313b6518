package stepmodel

// FloorMs is the least GPU time step b can take on m's GPU whatever the
// kernels: the longer of reading the bytes it must read (every weight of
// the blocks and the LM head once, and the K and V of every context token
// it attends to) at the full HBM bandwidth, and computing its FLOPs (the
// GEMMs at the weights' tensor-core peak, attention at the bf16 peak). The
// step model never goes below it (TestStepsNeverBeatThePhysicalFloor).
func (m *Model) FloorMs(b *Batch) float64 {
	if b.Tokens() == 0 {
		return 0
	}
	a, tp := m.Arch, float64(m.TP)
	layers := float64(a.Layers)
	s := shapeOf(a, m.TP)
	ctx := float64(b.DecodeContext)
	attnFlops := 2 * s.flopUnit * ctx // QKᵀ and PV over each context token
	for _, c := range b.Chunks {
		ctx += float64(c.Prefix + c.Tokens)
		attnFlops += s.flopUnit * float64(c.Tokens*c.Tokens+2*c.Tokens*c.Prefix)
	}
	head := float64(a.Hidden) * float64(a.Vocab) / tp
	bytes := layers*(a.LayerParams()*m.Prec.WeightBytes/tp+ctx*s.kvBytesPerToken) + 2*head
	gemm := 2*float64(b.Tokens())*layers*a.LayerParams()/tp + 2*float64(b.Seqs())*head
	peak := m.GPU.flopsPerMs()
	if m.Prec.FP8Compute && m.GPU.FP8TFLOPS > 0 {
		peak = m.GPU.FP8TFLOPS * 1e9
	}
	return max(bytes/m.GPU.bytesPerMs(), gemm/peak+layers*attnFlops/m.GPU.flopsPerMs())
}
