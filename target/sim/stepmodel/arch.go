package stepmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Arch is the shape of a decoder-only transformer: what the step model needs
// to size weights, KV and FLOPs.
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
}

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
	return errors.Join(errs...)
}

// hfConfig is the part of a Hugging Face config.json the model reads.
type hfConfig struct {
	ModelType          string  `json:"model_type"`
	Layers             *int    `json:"num_hidden_layers"`
	Hidden             *int    `json:"hidden_size"`
	Heads              *int    `json:"num_attention_heads"`
	KVHeads            *int    `json:"num_key_value_heads"`
	HeadDim            *int    `json:"head_dim"`
	Intermediate       *int    `json:"intermediate_size"`
	Vocab              *int    `json:"vocab_size"`
	HiddenAct          string  `json:"hidden_act"`
	TieWordEmbeddings  bool    `json:"tie_word_embeddings"`
	NumExperts         *int    `json:"num_local_experts"`
	NumExpertsQwen     *int    `json:"num_experts"`
	TorchDtype         *string `json:"torch_dtype"`
	QuantizationConfig any     `json:"quantization_config"`
}

// ArchFromHFConfig reads a Hugging Face config.json of a dense decoder-only
// model (Llama, Mistral, Qwen2, Phi and alike). Missing fields are errors
// that name them; mixture-of-experts models are refused (the step model has
// no expert routing).
func ArchFromHFConfig(name string, data []byte) (Arch, error) {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return Arch{}, fmt.Errorf("reading config.json: %w", err)
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
	if c.NumExperts != nil || c.NumExpertsQwen != nil {
		errs = append(errs, fmt.Errorf("config.json: model_type %q is a mixture of experts, which the step model does not cover", c.ModelType))
	}
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
	if err := errors.Join(errs...); err != nil {
		return Arch{}, err
	}
	if err := a.Validate(); err != nil {
		return Arch{}, fmt.Errorf("config.json: %w", err)
	}
	return a, nil
}

// KVBytesPerToken is the KV cache one token takes across all layers and
// GPUs: 2 (K and V) × layers × KV heads × head dim × bytes per element.
func (a Arch) KVBytesPerToken(elemBytes float64) float64 {
	return 2 * float64(a.Layers*a.KVHeads*a.HeadDim) * elemBytes
}

// mlpWidth is the output width of the MLP's up projection (gate and up
// together when gated).
func (a Arch) mlpWidth() int {
	if a.Gated {
		return 2 * a.Intermediate
	}
	return a.Intermediate
}

// LayerParams is the number of weights in one transformer block.
func (a Arch) LayerParams() float64 {
	q, kv := a.Heads*a.HeadDim, a.KVHeads*a.HeadDim
	attn := a.Hidden*(q+2*kv) + q*a.Hidden
	mlp := a.Hidden*a.mlpWidth() + a.Intermediate*a.Hidden
	return float64(attn + mlp + 2*a.Hidden)
}

// Params is the number of weights of the whole model.
func (a Arch) Params() float64 {
	emb := float64(a.Vocab * a.Hidden)
	head := emb
	if a.TiedEmbeddings {
		head = 0
	}
	return float64(a.Layers)*a.LayerParams() + emb + head + float64(a.Hidden)
}
