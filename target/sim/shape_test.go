package sim

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// A shape with a prompt's ids is the request the engine parses from the
// body with that prompt: same fields, same refusals of a length the
// model's context cannot hold.
func TestShapeRequestIsTheParsedBody(t *testing.T) {
	prof, err := LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet([]Options{{Profile: prof, Engine: engcfg.Config{Model: "m", MaxModelLen: 200}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &f.servers[0].cfg
	prompt := "the cat sat. on a mat with friends"
	ids := tokenizer.Tokenize(prompt)
	for _, c := range []struct {
		chat     bool
		body     string // %P: the prompt, %M: the length
		max      int
		refusing bool
	}{
		{false, `{"model":"m","prompt":"%P","max_tokens":%M,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}`, 7, false},
		{true, `{"model":"m","messages":[{"role":"user","content":"%P"}],"max_completion_tokens":%M,"stream":true,"seed":5,"temperature":0.7}`, 9, false},
		{false, `{"prompt":"%P","max_tokens":%M,"min_tokens":3,"stop":["x"],"kv_transfer_params":{"do_remote_decode":true}}`, 4, false},
		{false, `{"prompt":"%P","max_tokens":%M,"min_tokens":3}`, 2, true},
		{true, `{"messages":[{"role":"user","content":"%P"}],"max_tokens":%M}`, 195, true},
	} {
		body := strings.NewReplacer("%P", prompt, "%M", itoa(c.max)).Replace(c.body)
		want, werr := parseGenBody([]byte(body), c.chat, cfg)
		shell := strings.NewReplacer("%P", "x", "%M", "1").Replace(c.body)
		s, err := f.Shape(0, []byte(shell), c.chat)
		if err != nil {
			t.Fatalf("%s: shape: %v", shell, err)
		}
		got, gerr := s.request(ids, nil, c.max, cfg)
		if c.refusing {
			if werr == nil || gerr == nil || werr.msg != gerr.msg || werr.param != gerr.param {
				t.Errorf("%s: the body is refused with %v, the shape's request with %v", body, werr, gerr)
			}
			continue
		}
		if werr != nil || gerr != nil {
			t.Fatalf("%s: %v, %v", body, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nshape's request %+v\nparsed body     %+v", body, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
