package stepmodel

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// AttentionFit is the attention model fitted on vidur's measured A100
// Llama-3-8B rows (FlashInfer, TP 1), in physical units so that it scales to
// other shapes and GPUs:
//
//	decode(B seqs, C context each) = max(Floor, Base + KV·(B−B0)·C − PerSeq·B, KVpeak·B·C)
//	prefill(chunks c_i after prefixes k_i) = PrefillBase + Σ c_i·Tok + Flop·(c_i² + 2·c_i·k_i)
//
// KV is the time to read one token's K and V of one layer at DecodeEff of the
// bandwidth; Tok is a token's q/k/v/o bytes at PrefillTokEff of the bandwidth;
// Flop is one unit of causal attention work (2·heads·head_dim FLOPs) at
// PrefillFlopEff of the bf16 peak. B0 (sequences whose reads hide under the
// launch) and PerSeq (a per-sequence saving large batches show) are
// dimensionless/absolute fits. KVpeak reads the same bytes at DecodePeakEff,
// the highest fraction of the bandwidth any measured row reached: the fitted
// form extrapolates below the bytes the kernel must stream (one sequence at
// long context, where B−B0 < 1), and no step may read KV faster than the
// best measured kernel did.
type AttentionFit struct {
	DecodeFloorUs  float64 `json:"decode_floor_us"`
	DecodeBaseUs   float64 `json:"decode_base_us"`
	DecodeEff      float64 `json:"decode_eff"`
	DecodeB0       float64 `json:"decode_b0"`
	DecodePerSeqUs float64 `json:"decode_per_seq_us"`
	DecodePeakEff  float64 `json:"decode_peak_eff"`
	PrefillBaseUs  float64 `json:"prefill_base_us"`
	PrefillTokEff  float64 `json:"prefill_tok_eff"`
	PrefillFlopEff float64 `json:"prefill_flop_eff"`
}

// attnShape is one layer's attention on one GPU shard.
type attnShape struct {
	kvBytesPerToken float64 // K and V (or MLA's latent) of one token, this shard
	tokBytes        float64 // q, k, v and o of one token
	flopUnit        float64 // prefill FLOPs per unit of c² + 2ck
	decodeFlops     float64 // FLOPs per context token of a decoding sequence
}

// shapeOf is a's attention on one of tp GPUs with a bf16 KV cache.
func shapeOf(a Arch, tp int) attnShape { return shapeFor(a, tp, 2) }

// shapeFor is a's attention on one of tp GPUs with kvElem bytes per cached
// element. GQA splits the KV heads over the GPUs (each keeps at least one);
// MLA's latent is one per token for all heads, so every GPU caches and
// reads all of it (vLLM's blog: latent projections are duplicated across
// shards). MLA decodes in the absorbed form: per context token and head it
// scores the latent and rope key and sums the latent.
func shapeFor(a Arch, tp int, kvElem float64) attnShape {
	hq := float64(a.Heads) / float64(tp)
	if m := a.MLA; a.IsMLA() {
		qk, v, lat := float64(m.NopeDim+m.RopeDim), float64(m.VDim), float64(m.KVLoraRank+m.RopeDim)
		return attnShape{kvBytesPerToken: lat * kvElem, tokBytes: hq * (2*qk + 2*v) * 2, flopUnit: hq * (qk + v),
			decodeFlops: hq * 2 * (lat + float64(m.KVLoraRank))}
	}
	hkv := math.Max(1, float64(a.KVHeads)/float64(tp))
	hd := float64(a.HeadDim)
	return attnShape{kvBytesPerToken: 2 * hkv * hd * kvElem, tokBytes: (2*hq + 2*hkv) * hd * 2, flopUnit: 2 * hq * hd,
		decodeFlops: 4 * hq * hd}
}

// peakEff is the highest fraction of g's bandwidth a measured decode row
// reached: its K and V bytes over its time.
func peakEff(a Arch, g GPU, rows []AttentionRow) float64 {
	s := shapeOf(a, 1)
	best := 0.0
	for _, r := range rows {
		if r.Decode && r.AttnMs > 0 {
			best = math.Max(best, s.kvBytesPerToken*float64(r.Batch*r.KV)/(g.bytesPerMs()*r.AttnMs))
		}
	}
	return best
}

// DecodeMs is one layer's decode attention for seqs sequences over ctx
// context tokens in total.
func (f AttentionFit) DecodeMs(s attnShape, g GPU, seqs int, ctx float64) float64 {
	if seqs == 0 {
		return 0
	}
	b := float64(seqs)
	per := s.kvBytesPerToken / (g.bytesPerMs() * f.DecodeEff)
	c := ctx / b
	t := f.DecodeBaseUs/1e3 + per*(b-f.DecodeB0)*c - f.DecodePerSeqUs/1e3*b
	t = math.Max(t, s.kvBytesPerToken*ctx/(g.bytesPerMs()*f.DecodePeakEff))
	// MLA's absorbed decode does ~240 FLOPs per byte it reads, near the
	// ridge: it may be compute bound where GQA never is.
	t = math.Max(t, s.decodeFlops*ctx/(g.flopsPerMs()*f.PrefillFlopEff))
	return math.Max(t, f.DecodeFloorUs/1e3)
}

// GraphDecodeMs is DecodeMs inside a CUDA graph, where vLLM runs a batch of
// decodes only (a uniform decode batch; a step with a prefill chunk runs
// its attention outside the graphs, as vidur measured it). Without the
// eager launch path the per-layer fixed part (DecodeFloorUs) no longer
// hides the KV reads: a layer takes at least that fixed part plus its KV at
// the best measured bandwidth (and MLA's compute), the straight line in
// context that vLLM's single-sequence ITL fits show.
func (f AttentionFit) GraphDecodeMs(s attnShape, g GPU, seqs int, ctx float64) float64 {
	if seqs == 0 {
		return 0
	}
	floor := f.DecodeFloorUs / 1e3
	stream := s.kvBytesPerToken * ctx / (g.bytesPerMs() * f.DecodePeakEff)
	mla := s.decodeFlops * ctx / (g.flopsPerMs() * f.PrefillFlopEff)
	return math.Max(f.DecodeMs(s, g, seqs, ctx), floor+math.Max(stream, mla))
}

// PrefillMs is one layer's prefill attention for chunks (one kernel call).
func (f AttentionFit) PrefillMs(s attnShape, g GPU, chunks []Chunk) float64 {
	if len(chunks) == 0 {
		return 0
	}
	tok := s.tokBytes / (g.bytesPerMs() * f.PrefillTokEff)
	flop := s.flopUnit / (g.flopsPerMs() * f.PrefillFlopEff)
	kv := s.kvBytesPerToken / (g.bytesPerMs() * f.DecodePeakEff)
	t := f.PrefillBaseUs / 1e3
	for _, ch := range chunks {
		c, k := float64(ch.Tokens), float64(ch.Prefix)
		// A short chunk after a long prefix (the one token vLLM
		// recomputes after a prefix-cache hit) is bound by reading the
		// prefix's K and V, not by its FLOPs.
		t += max(c*tok+flop*(c*c+2*c*k), (c+k)*kv)
	}
	return t
}

// AttentionErrors are the fitted model's relative errors on rows.
func (f AttentionFit) AttentionErrors(a Arch, g GPU, tp int, rows []AttentionRow) []float64 {
	s := shapeOf(a, tp)
	out := make([]float64, len(rows))
	for i, r := range rows {
		var m float64
		if r.Decode {
			m = f.DecodeMs(s, g, r.Batch, float64(r.Batch*r.KV))
		} else {
			m = f.PrefillMs(s, g, []Chunk{{Tokens: r.Chunk, Prefix: r.KV}})
		}
		out[i] = m/r.AttnMs - 1
	}
	return out
}

// attentionArch is the shape of the measured rows (Meta-Llama-3-8B, TP 1).
var attentionArch = Arch{Name: "llama3-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
	Intermediate: 14336, Vocab: 128256, Gated: true}

// FitAttention fits the attention model to the measured A100 rows,
// minimising the worst relative error (the rows are few and each one is a
// promise).
func FitAttention(rows []AttentionRow) (AttentionFit, error) {
	g, err := LookupGPU("a100")
	if err != nil {
		return AttentionFit{}, err
	}
	var dec, pre []AttentionRow
	for _, r := range rows {
		if r.Decode {
			dec = append(dec, r)
		} else {
			pre = append(pre, r)
		}
	}
	if len(dec) < 5 || len(pre) < 3 {
		return AttentionFit{}, errors.New("fitting attention: too few measured rows")
	}
	peak := peakEff(attentionArch, g, dec)
	decodeOf := func(x []float64) AttentionFit {
		return AttentionFit{DecodeFloorUs: math.Exp(x[0]), DecodeBaseUs: math.Exp(x[1]), DecodeEff: sigmoid(x[2]),
			DecodeB0: x[3], DecodePerSeqUs: x[4], DecodePeakEff: peak}
	}
	prefillOf := func(x []float64) AttentionFit {
		return AttentionFit{PrefillBaseUs: math.Exp(x[0]), PrefillTokEff: sigmoid(x[1]), PrefillFlopEff: sigmoid(x[2])}
	}
	d, err := minimax(func(x []float64) []float64 { return decodeOf(x).AttentionErrors(attentionArch, g, 1, dec) },
		[]float64{math.Log(19), math.Log(24), logit(0.76), 0.74, 0.25})
	if err != nil {
		return AttentionFit{}, fmt.Errorf("fitting decode attention: %w", err)
	}
	p, err := minimax(func(x []float64) []float64 { return prefillOf(x).AttentionErrors(attentionArch, g, 1, pre) },
		[]float64{math.Log(8), logit(0.3), logit(0.5)})
	if err != nil {
		return AttentionFit{}, fmt.Errorf("fitting prefill attention: %w", err)
	}
	f := decodeOf(d)
	pf := prefillOf(p)
	f.PrefillBaseUs, f.PrefillTokEff, f.PrefillFlopEff = pf.PrefillBaseUs, pf.PrefillTokEff, pf.PrefillFlopEff
	return f, nil
}

// minimax minimises the largest absolute error errs returns, with a small
// L2 term to choose among equal maxima; several Nelder-Mead restarts.
func minimax(errs func([]float64) []float64, x0 []float64) ([]float64, error) {
	loss := func(x []float64) float64 {
		worst, sq := 0.0, 0.0
		for _, e := range errs(x) {
			worst = math.Max(worst, math.Abs(e))
			sq += e * e
		}
		return worst + 1e-3*sq
	}
	x := x0
	for range 10 {
		res, err := optimize.Minimize(optimize.Problem{Func: loss}, x,
			&optimize.Settings{FuncEvaluations: 20000, Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 500}},
			&optimize.NelderMead{})
		if res == nil {
			return nil, err
		}
		x = res.X
	}
	return x, nil
}
