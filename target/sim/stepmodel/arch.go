package stepmodel

import (
	"errors"
	"fmt"
)

// Arch is the shape of a decoder-only transformer: what the step model needs
// to size weights, KV and FLOPs. Dense models set only the first block of
// fields; mixtures of experts (MoE), multi-head latent attention (MLA) and
// sliding-window layers add theirs (zero: not used).
type Arch struct {
	Name         string `json:"name"`
	Layers       int    `json:"num_hidden_layers"`
	Hidden       int    `json:"hidden_size"`
	Heads        int    `json:"num_attention_heads"`
	KVHeads      int    `json:"num_key_value_heads"`
	HeadDim      int    `json:"head_dim"`
	Intermediate int    `json:"intermediate_size"`
	Vocab        int    `json:"vocab_size"`
	// Gated is a gated MLP (SwiGLU: gate and up projections), as in Llama;
	// false for a plain two-matrix MLP (phi-2's GELU).
	Gated bool `json:"gated"`
	// TiedEmbeddings shares the LM head with the input embedding.
	TiedEmbeddings bool `json:"tie_word_embeddings"`

	MoE MoE `json:"moe,omitzero"`
	MLA MLA `json:"mla,omitzero"`
	// Window is the sliding (or chunked local) attention span of the
	// WindowLayers layers that use one: they attend to at most Window
	// earlier tokens and keep at most that many in the KV cache.
	Window       int `json:"sliding_window,omitempty"`
	WindowLayers int `json:"sliding_window_layers,omitempty"`
	// Quantization is the checkpoint's own weight format
	// (config.json's quantization_config; "" = bf16), applied unless the
	// engine's quantization names another; ExpertsOnly applies it to the
	// routed experts alone (gpt-oss's MXFP4).
	Quantization string `json:"quantization,omitempty"`
	ExpertsOnly  bool   `json:"quantize_experts_only,omitempty"`
}

// MoE is a mixture of experts' feed-forward: in each MoE layer every token
// is routed to TopK of Experts experts of ExpertIntermediate width, plus
// Shared always-on experts of SharedIntermediate width in total. The first
// DenseLayers layers, and all but every Step-th after them, keep a dense
// MLP of the Arch's Intermediate width.
type MoE struct {
	Experts            int `json:"num_experts"`
	TopK               int `json:"num_experts_per_tok"`
	ExpertIntermediate int `json:"moe_intermediate_size"`
	SharedIntermediate int `json:"shared_expert_intermediate_size,omitempty"`
	DenseLayers        int `json:"first_k_dense_replace,omitempty"`
	Step               int `json:"moe_layer_step,omitempty"`
}

// MLA is DeepSeek's multi-head latent attention: queries through a
// QLoraRank bottleneck (0: none), one KVLoraRank latent plus a RopeDim key
// per token cached for all heads, NopeDim+RopeDim query/key and VDim value
// widths per head.
type MLA struct {
	QLoraRank  int `json:"q_lora_rank,omitempty"`
	KVLoraRank int `json:"kv_lora_rank"`
	RopeDim    int `json:"qk_rope_head_dim"`
	NopeDim    int `json:"qk_nope_head_dim"`
	VDim       int `json:"v_head_dim"`
}

// IsMoE reports whether a has routed experts.
func (a Arch) IsMoE() bool { return a.MoE.Experts > 0 }

// IsMLA reports whether a caches a latent instead of per-head K and V.
func (a Arch) IsMLA() bool { return a.MLA.KVLoraRank > 0 }

// Validate names every field that cannot describe a model.
func (a Arch) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"num_hidden_layers", a.Layers}, {"hidden_size", a.Hidden}, {"num_attention_heads", a.Heads},
		{"num_key_value_heads", a.KVHeads}, {"head_dim", a.HeadDim}, {"intermediate_size", a.Intermediate},
		{"vocab_size", a.Vocab},
	} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be > 0, got %d", f.name, f.v))
		}
	}
	if a.KVHeads > 0 && a.Heads%a.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("num_key_value_heads: %d does not divide num_attention_heads %d", a.KVHeads, a.Heads))
	}
	if m := a.MoE; m != (MoE{}) {
		if m.Experts <= 0 || m.TopK <= 0 || m.TopK > m.Experts {
			errs = append(errs, fmt.Errorf("num_experts_per_tok: %d must be in 1..num_experts %d", m.TopK, m.Experts))
		}
		if m.ExpertIntermediate <= 0 {
			errs = append(errs, fmt.Errorf("moe_intermediate_size: must be > 0, got %d", m.ExpertIntermediate))
		}
		if m.DenseLayers < 0 || m.DenseLayers > a.Layers || m.Step < 0 || m.SharedIntermediate < 0 {
			errs = append(errs, fmt.Errorf("first_k_dense_replace %d, moe layer step %d, shared_expert_intermediate_size %d: out of range",
				m.DenseLayers, m.Step, m.SharedIntermediate))
		}
	}
	if m := a.MLA; m != (MLA{}) && (m.KVLoraRank <= 0 || m.RopeDim <= 0 || m.NopeDim <= 0 || m.VDim <= 0 || m.QLoraRank < 0) {
		errs = append(errs, fmt.Errorf("kv_lora_rank %d, qk_rope_head_dim %d, qk_nope_head_dim %d, v_head_dim %d: must all be > 0",
			m.KVLoraRank, m.RopeDim, m.NopeDim, m.VDim))
	}
	if a.Window < 0 || a.WindowLayers < 0 || a.WindowLayers > a.Layers || (a.WindowLayers > 0) != (a.Window > 0) {
		errs = append(errs, fmt.Errorf("sliding_window %d on %d layers: out of range", a.Window, a.WindowLayers))
	}
	return errors.Join(errs...)
}

// MoELayers is the number of layers with routed experts.
func (a Arch) MoELayers() int {
	if !a.IsMoE() {
		return 0
	}
	step := max(a.MoE.Step, 1)
	n := 0
	for l := a.MoE.DenseLayers; l < a.Layers; l++ {
		if (l+1)%step == 0 {
			n++
		}
	}
	return n
}

// kvElems is the cached elements per token of one layer across all ranks:
// K and V of every KV head, or MLA's one latent and rope key.
func (a Arch) kvElems() float64 {
	if a.IsMLA() {
		return float64(a.MLA.KVLoraRank + a.MLA.RopeDim)
	}
	return 2 * float64(a.KVHeads*a.HeadDim)
}

// fullLayers are the layers whose KV grows with the context.
func (a Arch) fullLayers() int { return a.Layers - a.WindowLayers }

// KVBytesPerToken is the KV cache one token takes in the layers whose
// cache grows with the context, across all layers and GPUs: 2 (K and V) ×
// layers × KV heads × head dim × bytes per element, or MLA's latent and
// rope key per layer. Sliding-window layers keep only a sequence's last
// Window tokens (Model.KVBytesPerToken counts their share).
func (a Arch) KVBytesPerToken(elemBytes float64) float64 {
	return float64(a.fullLayers()) * a.kvElems() * elemBytes
}

// mlpWidth is the output width of the MLP's up projection (gate and up
// together when gated).
func (a Arch) mlpWidth() int { return a.gatedWidth(a.Intermediate) }

func (a Arch) gatedWidth(inter int) int {
	if a.Gated {
		return 2 * inter
	}
	return inter
}

// attnParams is the weights of one layer's attention projections.
func (a Arch) attnParams() float64 {
	d, h := float64(a.Hidden), float64(a.Heads)
	if m := a.MLA; a.IsMLA() {
		qk := float64(m.NopeDim + m.RopeDim)
		q := d * h * qk
		if m.QLoraRank > 0 {
			q = d*float64(m.QLoraRank) + float64(m.QLoraRank)*h*qk
		}
		kv := d*float64(m.KVLoraRank+m.RopeDim) + float64(m.KVLoraRank)*h*float64(m.NopeDim+m.VDim)
		return q + kv + h*float64(m.VDim)*d
	}
	q, kv := float64(a.Heads*a.HeadDim), float64(a.KVHeads*a.HeadDim)
	return d*(q+2*kv) + q*d
}

// mlpParams is one MLP (or expert) of intermediate width inter.
func (a Arch) mlpParams(inter int) float64 {
	return float64(a.Hidden) * float64(a.gatedWidth(inter)+inter)
}

// expertParams is one routed expert; sharedParams the shared experts of a
// MoE layer and its router.
func (a Arch) expertParams() float64 { return a.mlpParams(a.MoE.ExpertIntermediate) }
func (a Arch) sharedParams() float64 {
	return a.mlpParams(a.MoE.SharedIntermediate) + float64(a.Hidden*a.MoE.Experts)
}

// LayerParams is the number of weights in one dense transformer block.
func (a Arch) LayerParams() float64 {
	return a.attnParams() + a.mlpParams(a.Intermediate) + float64(2*a.Hidden)
}

// embParams is the input embedding and, unless tied, the LM head.
func (a Arch) embParams() float64 {
	emb := float64(a.Vocab * a.Hidden)
	if a.TiedEmbeddings {
		return emb
	}
	return 2 * emb
}

// Params is the number of weights of the whole model.
func (a Arch) Params() float64 {
	dense := a.Layers - a.MoELayers()
	moe := float64(a.MoELayers()) * (a.attnParams() + a.sharedParams() + float64(a.MoE.Experts)*a.expertParams() + float64(2*a.Hidden))
	return float64(dense)*a.LayerParams() + moe + a.embParams() + float64(a.Hidden)
}

// ActiveParams is the weights one token uses: every expert but the TopK
// routed ones left out.
func (a Arch) ActiveParams() float64 {
	return a.Params() - float64(a.MoELayers()*(a.MoE.Experts-a.MoE.TopK))*a.expertParams()
}
