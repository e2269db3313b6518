package driver

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// A body cut from the template is the body encoding/json renders, byte for
// byte, on both endpoints, with and without extra_body and sampling
// parameters, for generated prompts and for prompts it must escape (which
// the template leaves to the marshaller).
func TestBodyTemplateIsTheMarshalledBody(t *testing.T) {
	yes := true
	prompts := []string{"x", `say "hi" & <go>\ now`, "naïve café", "tab\there", "line\nbreak"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		prompts = append(prompts, tokenizer.Generate(r, 1+r.IntN(300)))
	}
	for _, w := range []Workload{
		{IgnoreEOS: &yes},
		{IgnoreEOS: &yes, Temperature: 0.7, TopP: 0.9, TopK: 5},
		{IgnoreEOS: &yes, ExtraBody: map[string]any{"seed": 3, "model": "other", "min_tokens": 2}},
		{IgnoreEOS: &yes, ExtraBody: map[string]any{"max_tokens": 5}},
	} {
		for _, endpoint := range []string{CompletionsEndpoint, ChatEndpoint} {
			cfg := Config{Endpoint: endpoint, Model: "m<&>", Workload: w}
			r := newRenderer(cfg)
			plain := r
			plain.template = nil
			templated := 0
			for i, p := range prompts {
				c := conversation{turns: []string{p}}
				got, err := r.body(c, 1+i*37)
				if err != nil {
					t.Fatal(err)
				}
				want, err := plain.body(c, 1+i*37)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %v: prompt %.30q: template\n%s\nmarshalled\n%s", endpoint, w.ExtraBody, p, got, want)
				}
				if r.template != nil && plainJSON(p) {
					templated++
				}
			}
			// An extra_body that sets the length leaves no hole for it.
			_, overridden := w.ExtraBody["max_tokens"]
			overridden = overridden && endpoint == CompletionsEndpoint
			if overridden != (r.template == nil) || !overridden && templated < 30 {
				t.Fatalf("%s %v: template %v, %d bodies cut from it", endpoint, w.ExtraBody, r.template != nil, templated)
			}
		}
	}
}
