package stepmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// hfConfig is the part of a Hugging Face config.json the model reads, over
// the families vLLM serves: Llama, Mistral, Qwen2/3 (dense and MoE),
// Mixtral, DeepSeek-V2/V3 (MLA), gpt-oss and Llama-4 (its text_config).
type hfConfig struct {
	ModelType         string `json:"model_type"`
	Layers            *int   `json:"num_hidden_layers"`
	Hidden            *int   `json:"hidden_size"`
	Heads             *int   `json:"num_attention_heads"`
	KVHeads           *int   `json:"num_key_value_heads"`
	HeadDim           *int   `json:"head_dim"`
	Intermediate      *int   `json:"intermediate_size"`
	Vocab             *int   `json:"vocab_size"`
	HiddenAct         string `json:"hidden_act"`
	TieWordEmbeddings bool   `json:"tie_word_embeddings"`

	// Experts: num_local_experts (Mixtral, gpt-oss, Llama-4), num_experts
	// (Qwen-MoE), n_routed_experts (DeepSeek).
	LocalExperts  *int `json:"num_local_experts"`
	QwenExperts   *int `json:"num_experts"`
	RoutedExperts *int `json:"n_routed_experts"`
	TopK          *int `json:"num_experts_per_tok"`
	// ExpertsPerToken is gpt-oss's own name for num_experts_per_tok.
	ExpertsPerToken *int `json:"experts_per_token"`
	// MoEIntermediate: Qwen-MoE and DeepSeek; Mixtral, gpt-oss and
	// Llama-4 give the expert width as intermediate_size (Llama-4's dense
	// layers use intermediate_size_mlp).
	MoEIntermediate    *int  `json:"moe_intermediate_size"`
	DenseIntermediate  *int  `json:"intermediate_size_mlp"`
	SharedIntermediate *int  `json:"shared_expert_intermediate_size"`
	SharedExperts      *int  `json:"n_shared_experts"`
	FirstKDense        *int  `json:"first_k_dense_replace"`
	MoELayerFreq       *int  `json:"moe_layer_freq"`
	DecoderSparseStep  *int  `json:"decoder_sparse_step"`
	InterleaveMoEStep  *int  `json:"interleave_moe_layer_step"`
	MLPOnlyLayers      []int `json:"mlp_only_layers"`

	QLoraRank  *int `json:"q_lora_rank"`
	KVLoraRank *int `json:"kv_lora_rank"`
	RopeDim    *int `json:"qk_rope_head_dim"`
	NopeDim    *int `json:"qk_nope_head_dim"`
	VDim       *int `json:"v_head_dim"`

	SlidingWindow    *int     `json:"sliding_window"`
	UseSlidingWindow *bool    `json:"use_sliding_window"`
	LayerTypes       []string `json:"layer_types"`
	AttnChunkSize    *int     `json:"attention_chunk_size"`
	NoRopeLayers     []int    `json:"no_rope_layers"`

	Quant *struct {
		Method              string   `json:"quant_method"`
		QuantAlgo           string   `json:"quant_algo"`
		Bits                int      `json:"bits"`
		ModulesToNotConvert []string `json:"modules_to_not_convert"`
		WeightBlockSize     []int    `json:"weight_block_size"`
	} `json:"quantization_config"`

	TextConfig json.RawMessage `json:"text_config"`
}

// ArchFromHFConfig reads a Hugging Face config.json: a dense decoder
// (Llama, Mistral, Qwen2/3, Phi and alike), a mixture of experts (Mixtral,
// Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3, gpt-oss, Llama-4's text model) with
// MLA and sliding-window layers where the family has them. Missing fields
// are errors that name them.
func ArchFromHFConfig(name string, data []byte) (Arch, error) {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return Arch{}, fmt.Errorf("reading config.json: %w", err)
	}
	if len(c.TextConfig) > 0 && c.Layers == nil { // Llama-4: the language model's fields
		var t hfConfig
		if err := json.Unmarshal(c.TextConfig, &t); err != nil {
			return Arch{}, fmt.Errorf("reading config.json text_config: %w", err)
		}
		if t.Quant == nil {
			t.Quant = c.Quant
		}
		t.TieWordEmbeddings = t.TieWordEmbeddings || c.TieWordEmbeddings
		c = t
	}
	var errs []error
	need := func(field string, p *int) int {
		if p == nil {
			errs = append(errs, fmt.Errorf("config.json: %s is missing", field))
			return 0
		}
		return *p
	}
	a := Arch{Name: name,
		Layers: need("num_hidden_layers", c.Layers), Hidden: need("hidden_size", c.Hidden),
		Heads: need("num_attention_heads", c.Heads), Intermediate: need("intermediate_size", c.Intermediate),
		Vocab: need("vocab_size", c.Vocab), TiedEmbeddings: c.TieWordEmbeddings}
	a.KVHeads = a.Heads
	if c.KVHeads != nil {
		a.KVHeads = *c.KVHeads
	}
	if c.HeadDim != nil {
		a.HeadDim = *c.HeadDim
	} else if a.Heads > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	switch act := strings.ToLower(c.HiddenAct); act {
	case "silu", "swish", "swiglu", "":
		a.Gated = true
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		a.Gated = c.ModelType == "gemma" || c.ModelType == "gemma2" // GeGLU
	default:
		errs = append(errs, fmt.Errorf("config.json: hidden_act %q is not one the step model knows (silu, gelu)", act))
	}
	c.moe(&a, &errs)
	c.mla(&a, &errs)
	c.window(&a)
	c.quantization(&a)
	if err := errors.Join(errs...); err != nil {
		return Arch{}, err
	}
	if err := a.Validate(); err != nil {
		return Arch{}, fmt.Errorf("config.json: %w", err)
	}
	return a, nil
}

func (c *hfConfig) moe(a *Arch, errs *[]error) {
	experts := c.LocalExperts
	for _, p := range []*int{c.QwenExperts, c.RoutedExperts} {
		if experts == nil {
			experts = p
		}
	}
	if experts == nil || *experts == 0 {
		return
	}
	m := MoE{Experts: *experts, ExpertIntermediate: a.Intermediate, Step: 1}
	if c.TopK == nil {
		c.TopK = c.ExpertsPerToken
	}
	if c.TopK == nil {
		*errs = append(*errs, fmt.Errorf("config.json: num_experts_per_tok is missing (model_type %q has %d experts)", c.ModelType, m.Experts))
	} else {
		m.TopK = *c.TopK
	}
	if c.MoEIntermediate != nil { // Qwen-MoE, DeepSeek: intermediate_size is the dense layers'
		m.ExpertIntermediate = *c.MoEIntermediate
	}
	if c.DenseIntermediate != nil { // Llama-4: intermediate_size is the expert's
		a.Intermediate = *c.DenseIntermediate
	}
	switch {
	case c.SharedIntermediate != nil:
		m.SharedIntermediate = *c.SharedIntermediate
	case c.SharedExperts != nil:
		m.SharedIntermediate = *c.SharedExperts * m.ExpertIntermediate
	case strings.HasPrefix(c.ModelType, "llama4"):
		// Llama-4's MoE layers always add one shared expert of the
		// routed experts' width (llama-models moe.py).
		m.SharedIntermediate = m.ExpertIntermediate
	}
	if c.FirstKDense != nil {
		m.DenseLayers = *c.FirstKDense
	}
	for _, p := range []*int{c.MoELayerFreq, c.DecoderSparseStep, c.InterleaveMoEStep} {
		if p != nil && *p > 0 {
			m.Step = *p
		}
	}
	if len(c.MLPOnlyLayers) > 0 {
		// Qwen-MoE's mlp_only_layers: counted as leading dense layers
		// (only their number matters to the step time).
		m.DenseLayers += len(c.MLPOnlyLayers)
	}
	a.MoE = m
}

func (c *hfConfig) mla(a *Arch, errs *[]error) {
	if c.KVLoraRank == nil || *c.KVLoraRank == 0 {
		return
	}
	get := func(field string, p *int) int {
		if p == nil {
			*errs = append(*errs, fmt.Errorf("config.json: %s is missing (kv_lora_rank is set: multi-head latent attention)", field))
			return 0
		}
		return *p
	}
	a.MLA = MLA{KVLoraRank: *c.KVLoraRank, RopeDim: get("qk_rope_head_dim", c.RopeDim),
		NopeDim: get("qk_nope_head_dim", c.NopeDim), VDim: get("v_head_dim", c.VDim)}
	if c.QLoraRank != nil {
		a.MLA.QLoraRank = *c.QLoraRank
	}
	// Per-head shapes for the parts that read them (TP divisibility,
	// prefill FLOPs): a head's query/key width.
	a.HeadDim = a.MLA.NopeDim + a.MLA.RopeDim
}

func (c *hfConfig) window(a *Arch) {
	switch {
	case len(c.LayerTypes) > 0 && c.SlidingWindow != nil: // gpt-oss: layer_types
		for _, t := range c.LayerTypes {
			if t == "sliding_attention" {
				a.WindowLayers++
			}
		}
		a.Window = *c.SlidingWindow
	case c.AttnChunkSize != nil && *c.AttnChunkSize > 0:
		// Llama-4: chunked local attention on the RoPE layers, global on
		// every 4th (no_rope_layers, else llama-models' interval of 4).
		global := a.Layers / 4
		if len(c.NoRopeLayers) == a.Layers {
			global = 0
			for _, r := range c.NoRopeLayers {
				if r == 0 {
					global++
				}
			}
		}
		a.Window, a.WindowLayers = *c.AttnChunkSize, a.Layers-global
	case c.SlidingWindow != nil && *c.SlidingWindow > 0 && (c.UseSlidingWindow == nil || *c.UseSlidingWindow):
		a.Window, a.WindowLayers = *c.SlidingWindow, a.Layers // Mistral-style: every layer
	}
	if a.WindowLayers == 0 {
		a.Window = 0
	}
}

func (c *hfConfig) quantization(a *Arch) {
	q := c.Quant
	if q == nil {
		return
	}
	switch m := strings.ToLower(q.Method); m {
	case "modelopt":
		a.Quantization = "fp8"
		if strings.Contains(strings.ToLower(q.QuantAlgo), "fp4") {
			a.Quantization = "nvfp4"
		}
	case "awq", "gptq":
		a.Quantization = "int4"
		if q.Bits == 8 {
			a.Quantization = "int8"
		}
	default:
		a.Quantization = m
	}
	for _, mod := range q.ModulesToNotConvert {
		if strings.Contains(mod, "self_attn") && a.IsMoE() {
			a.ExpertsOnly = true
		}
	}
	if a.Quantization == "mxfp4" && a.IsMoE() {
		a.ExpertsOnly = true // gpt-oss: "MXFP4 quantization of the MoE weights"
	}
}
