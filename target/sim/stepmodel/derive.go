package stepmodel

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// Efficiency is how close one GPU's kernels come to its datasheet peaks,
// fitted on measured linear-layer times. With it the linear layers of a model
// or GPU without measurements are derived from the architecture: each GEMM
// takes the smooth maximum of its memory time (weights and activations at
// MemEff of the bandwidth) and its compute time (at ComputeEff of the bf16
// peak), plus a fixed GEMMUs; the elementwise ops (norms, rotary embedding,
// activation, residual add) take SmallUs each plus their bytes at SmallEff
// of the bandwidth.
type Efficiency struct {
	MemEff     float64 `json:"mem_eff"`
	ComputeEff float64 `json:"compute_eff"`
	// Sharpness is the exponent of the smooth maximum (large: a hard
	// roofline; small: the two times add up near the ridge).
	Sharpness float64 `json:"sharpness"`
	GEMMUs    float64 `json:"gemm_us"`
	SmallUs   float64 `json:"small_us"`
	SmallEff  float64 `json:"small_eff"`
}

// gemmMs is one GEMM of t tokens by a k×n weight on g; activations are
// bf16.
func (e Efficiency) gemmMs(g GPU, p Precision, t, k, n float64) float64 {
	mem := (p.WeightBytes*k*n + 2*(t*k+t*n)) / (g.bytesPerMs() * e.MemEff)
	comp := 2 * t * k * n / (g.peakPerMs(p.Rate) * e.ComputeEff)
	return e.roof(mem, comp) + e.GEMMUs/1e3
}

// roof is the smooth maximum of a kernel's memory and compute times.
func (e Efficiency) roof(mem, comp float64) float64 {
	x := e.Sharpness
	return math.Pow(math.Pow(mem, x)+math.Pow(comp, x), 1/x)
}

// LayerMs is the derived time of one transformer block's non-attention
// operations for t tokens on one of tp GPUs (what vidur's mlp.csv measures).
func (e Efficiency) LayerMs(a Arch, g GPU, tp int, t float64) float64 {
	return e.layerMs(a, g, BF16, tp, t)
}

func (e Efficiency) layerMs(a Arch, g GPU, p Precision, tp int, t float64) float64 {
	s := float64(tp)
	d, inter, width := float64(a.Hidden), float64(a.Intermediate), float64(a.mlpWidth())
	ms := e.attnProjMs(a, g, p, tp, t) + e.gemmMs(g, p, t, d, width/s) + e.gemmMs(g, p, t, inter/s, d)
	return ms + e.smallMs(a, g, tp, t, (width+inter)/s)
}

// attnProjMs is one layer's attention projections: QKV and O, or MLA's
// low-rank query and latent projections (the down-projections replicated
// on every rank, as vLLM runs them).
func (e Efficiency) attnProjMs(a Arch, g GPU, p Precision, tp int, t float64) float64 {
	s, d, h := float64(tp), float64(a.Hidden), float64(a.Heads)
	if m := a.MLA; a.IsMLA() {
		qk, kvl := float64(m.NopeDim+m.RopeDim), float64(m.KVLoraRank)
		ms := e.gemmMs(g, p, t, d, kvl+float64(m.RopeDim)) + e.gemmMs(g, p, t, kvl, h*float64(m.NopeDim+m.VDim)/s) +
			e.gemmMs(g, p, t, h*float64(m.VDim)/s, d)
		if m.QLoraRank > 0 {
			return ms + e.gemmMs(g, p, t, d, float64(m.QLoraRank)) + e.gemmMs(g, p, t, float64(m.QLoraRank), h*qk/s)
		}
		return ms + e.gemmMs(g, p, t, d, h*qk/s)
	}
	q, kv := float64(a.Heads*a.HeadDim), float64(a.KVHeads*a.HeadDim)
	return e.gemmMs(g, p, t, d, (q+2*kv)/s) + e.gemmMs(g, p, t, q/s, d)
}

// smallMs is the elementwise ops of one layer; mlp is the per-token width
// the activation reads and writes on this GPU. Bytes per token: two norms
// (read and write d), rotary on q and k, the activation, the residual add
// (two reads, one write), all bf16.
func (e Efficiency) smallMs(a Arch, g GPU, tp int, t, mlp float64) float64 {
	s, d := float64(tp), float64(a.Hidden)
	q, kv := float64(a.Heads*a.HeadDim), float64(a.KVHeads*a.HeadDim)
	if a.IsMLA() {
		kv = float64(a.MLA.KVLoraRank + a.MLA.RopeDim)
	}
	small := 2*(2*d) + 2*(q+kv)/s + mlp + 3*d
	return 5*e.SmallUs/1e3 + 2*small*t/(g.bytesPerMs()*e.SmallEff)
}

// groupedGEMMMemEff and groupedGEMMComputeEff are how much of a dense
// GEMM's memory and compute efficiency vLLM's fused MoE kernels reach
// (routing tokens to experts, gathering them, dequantizing 4- and 8-bit
// experts in the kernel: work on the compute side of the roofline, not on
// the bytes), and moeFixedUs the fixed latency one MoE layer adds beyond
// its router GEMM and grouped GEMM pair: the routing kernels (top-k,
// per-expert counts and offsets) and the combine of the top-k outputs.
// They are the MoE figures fitted on measurements, all of them gpt-oss-20b
// on one H100 (vLLM blog "FP8 KV-cache", 2026-04-22): the compute side on
// Table 5's BF16 run (shared/reference/fidelity-moe.md row 1) as a single
// efficiency before the split, the memory side and the fixed latency
// jointly on the same run's median ITL (8.09 ms) and the single-sequence
// ITL fit's intercept (4.03–4.07 ms; row 4's sweep). Kernel benchmarks put
// the routing alone at 12–18 µs on Hopper (Triton's gpt-oss routing,
// triton-lang/triton PRs 7369 and 7396) and 8–10 µs on Blackwell
// (TensorRT-LLM's routing kernel, NVIDIA/TensorRT-LLM PR 14590). Every
// other MoE row, the B200 ones included, checks them (docs/sim.md).
var (
	groupedGEMMMemEff     = 0.69
	groupedGEMMComputeEff = 0.5
	moeFixedUs            = 47.0
)

// moeLayerMs is one MoE layer's non-attention operations for the t tokens
// of this rank: the attention projections, the router, the shared experts
// and the routed experts as one grouped GEMM pair. Weight reads follow the
// experts the tokens touch (E·(1−(1−k/E)^T) of E for T tokens routed
// uniformly: few at small batches, all at large ones). Without expert
// parallelism (ep ≤ 1) every GPU holds every expert split over tp; with it
// a GPU holds E/ep whole experts and computes the tokens routed to them out
// of tAll, the tokens of all ep/tp data-parallel ranks stepping together.
func (e Efficiency) moeLayerMs(a Arch, g GPU, dense, experts Precision, tp, ep int, t, tAll float64) float64 {
	s, d := float64(tp), float64(a.Hidden)
	m := a.MoE
	ms := e.attnProjMs(a, g, dense, tp, t) + e.gemmMs(g, BF16, t, d, float64(m.Experts))
	if sh := float64(m.SharedIntermediate); sh > 0 {
		ms += e.gemmMs(g, dense, t, d, float64(a.gatedWidth(m.SharedIntermediate))/s) + e.gemmMs(g, dense, t, sh/s, d)
	}
	local, inter, routed, tokens := float64(m.Experts), float64(m.ExpertIntermediate)/s, t*float64(m.TopK), t
	if ep > 1 {
		local, inter, routed, tokens = float64(m.Experts)/float64(ep), float64(m.ExpertIntermediate), tAll*float64(m.TopK)/float64(ep), tAll
	}
	width := inter
	if a.Gated {
		width *= 2
	}
	touched := local * (1 - math.Pow(1-float64(m.TopK)/float64(m.Experts), tokens))
	mem := (experts.WeightBytes*touched*d*(width+inter) + 2*routed*(2*d+width+inter)) / (g.bytesPerMs() * e.MemEff * groupedGEMMMemEff)
	comp := 2 * routed * d * (width + inter) / (g.peakPerMs(experts.Rate) * e.ComputeEff * groupedGEMMComputeEff)
	ms += e.roof(mem, comp) + 2*e.GEMMUs/1e3 + moeFixedUs/1e3
	return ms + e.smallMs(a, g, tp, t, float64(m.TopK)*(width+inter)+float64(a.gatedWidth(m.SharedIntermediate)+m.SharedIntermediate)/s)
}

// LMHeadMs is the LM head GEMM over the hidden states of seqs sequences
// (vLLM computes logits only where it samples), its vocabulary split over tp
// GPUs.
func (e Efficiency) LMHeadMs(a Arch, g GPU, tp, seqs int) float64 {
	if seqs == 0 {
		return 0
	}
	return e.gemmMs(g, BF16, float64(seqs), float64(a.Hidden), float64(a.Vocab)/float64(tp))
}

// Validate reports efficiencies outside (0, 1] and negative latencies.
func (e Efficiency) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"mem_eff", e.MemEff}, {"compute_eff", e.ComputeEff}, {"small_eff", e.SmallEff}} {
		if !(f.v > 0 && f.v <= 1) {
			errs = append(errs, fmt.Errorf("%s: must be in (0, 1], got %v", f.name, f.v))
		}
	}
	if !(e.Sharpness >= 1) {
		errs = append(errs, fmt.Errorf("sharpness: must be >= 1, got %v", e.Sharpness))
	}
	if !(e.GEMMUs >= 0) || !(e.SmallUs >= 0) {
		errs = append(errs, fmt.Errorf("gemm_us, small_us: must be >= 0, got %v, %v", e.GEMMUs, e.SmallUs))
	}
	return errors.Join(errs...)
}

// LinearSample is one measured linear-layer time for the efficiency fit.
type LinearSample struct {
	Arch Arch
	TP   int
	T    float64
	Ms   float64
}

// FitEfficiency fits g's efficiencies to samples, minimising the mean
// squared relative error.
func FitEfficiency(g GPU, samples []LinearSample) (Efficiency, error) {
	if len(samples) == 0 {
		return Efficiency{}, errors.New("fitting efficiencies: no samples")
	}
	// Parameters are searched in an unconstrained space: logits for the
	// fractions, logs for the rest.
	decode := func(x []float64) Efficiency {
		return Efficiency{MemEff: sigmoid(x[0]), ComputeEff: sigmoid(x[1]), Sharpness: 1 + math.Exp(x[2]),
			GEMMUs: math.Exp(x[3]), SmallUs: math.Exp(x[4]), SmallEff: sigmoid(x[5])}
	}
	loss := func(x []float64) float64 {
		e := decode(x)
		sum := 0.0
		for _, s := range samples {
			r := e.LayerMs(s.Arch, g, s.TP, s.T)/s.Ms - 1
			sum += r * r
		}
		return sum / float64(len(samples))
	}
	x0 := []float64{logit(0.7), logit(0.6), math.Log(2), math.Log(3), math.Log(3), logit(0.5)}
	res, err := optimize.Minimize(optimize.Problem{Func: loss}, x0,
		&optimize.Settings{FuncEvaluations: 20000, Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 200}},
		&optimize.NelderMead{})
	if err != nil && res == nil {
		return Efficiency{}, fmt.Errorf("fitting efficiencies: %w", err)
	}
	// Restart once from the optimum: Nelder-Mead stalls on flat ridges.
	res2, err := optimize.Minimize(optimize.Problem{Func: loss}, res.X,
		&optimize.Settings{FuncEvaluations: 20000, Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 200}},
		&optimize.NelderMead{})
	if err == nil || res2 != nil {
		res = res2
	}
	return decode(res.X), nil
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64   { return math.Log(p / (1 - p)) }
