package stepmodel

import (
	"strings"
	"testing"
)

// A Hugging Face config.json of Llama-3-8B gives the same shape as vidur's
// model config, and the derived model sizes it like the measured one.
func TestArchFromHFConfig(t *testing.T) {
	t.Parallel()
	cfg := `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,"intermediate_size":14336,
		"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":128256,"hidden_act":"silu",
		"tie_word_embeddings":false,"torch_dtype":"bfloat16"}`
	a, err := ArchFromHFConfig("llama3-8b", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if want := archs["llama3-8b"]; a != want {
		t.Fatalf("config.json gives %+v, vidur's config %+v", a, want)
	}
	if got := a.KVBytesPerToken(2); got != 131072 {
		t.Errorf("KV bytes per token %v, want 131072 (2 × 32 layers × 8 heads × 128 × 2 B)", got)
	}
	if p := a.Params(); p < 8.0e9 || p > 8.1e9 {
		t.Errorf("parameters %.3g, want Llama-3-8B's 8.03e9", p)
	}
}

func TestArchFromHFConfigNamesMissingFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cfg, want string }{
		{`{"hidden_size":4096}`, "num_hidden_layers"},
		{`{"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32,"intermediate_size":1,"vocab_size":1,"num_key_value_heads":5}`, "num_key_value_heads"},
		{`{"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32,"intermediate_size":1,"vocab_size":1,"hidden_act":"relu2"}`, "hidden_act"},
		{`{"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32,"intermediate_size":1,"vocab_size":1,"num_local_experts":8}`, "num_experts_per_tok"},
		{`not json`, "config.json"},
	} {
		if _, err := ArchFromHFConfig("m", []byte(c.cfg)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}

// Tables interpolate between knots, hold below the first and grow in
// proportion above the last; a fit recovers a piecewise-linear function
// exactly.
func TestTableFitAndEval(t *testing.T) {
	t.Parallel()
	f := func(x float64) float64 { return 1 + 0.5*max(0, x-10) }
	var pts []Point
	for x := 1.0; x <= 40; x++ {
		pts = append(pts, Point{x, f(x)})
	}
	tab, err := FitTable(pts, []float64{1, 10, 20, 40}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{1, 5, 10, 15, 33, 40} {
		if got := tab.Eval(x); abs(got-f(x)) > 1e-9 {
			t.Errorf("Eval(%v) = %v, want %v", x, got, f(x))
		}
	}
	if got := tab.Eval(0.5); abs(got-1) > 1e-9 {
		t.Errorf("below the first knot: %v, want 1", got)
	}
	if got, want := tab.Eval(80), 2*f(40); abs(got-want) > 1e-9 {
		t.Errorf("above the last knot: %v, want %v (proportional)", got, want)
	}
	if _, err := FitTable(pts[:3], []float64{1, 10, 20, 40}, 0); err == nil {
		t.Error("a fit with fewer points than knots succeeded")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Every shipped profile resolves, leaves the promised KV room, and a
// decode step grows with the batch.
func TestCatalogueProfilesAreUsable(t *testing.T) {
	t.Parallel()
	cat := Catalogue()
	if len(cat) < 20 {
		t.Fatalf("%d calibrated profiles", len(cat))
	}
	names := map[string]bool{}
	for _, e := range cat {
		names[e.Name] = true
		one := e.Model.StepMs(&Batch{DecodeSeqs: 1, DecodeContext: 1024})
		many := e.Model.StepMs(&Batch{DecodeSeqs: 256, DecodeContext: 256 * 1024})
		if !(one > 0 && many > one) {
			t.Errorf("%s: decode step %v ms at 1 sequence, %v ms at 256", e.Name, one, many)
		}
	}
	for _, want := range []string{"h100-llama3-8b", "a100-llama3-8b", "h100-llama2-7b", "a100-llama2-7b",
		"h100-llama3-70b-tp4", "h100-llama3-70b-tp8", "a100-llama2-70b-tp4", "a100-llama2-70b-tp8",
		"h100-codellama-34b", "a100-qwen-72b-tp4", "h200-llama3-8b"} {
		if !names[want] {
			t.Errorf("profile %s missing", want)
		}
	}
}
