package process

import (
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
)

func TestTemplateArgv(t *testing.T) {
	tmpl, err := ParseTemplate(`vllm serve {model} --host {host} --port {port} {engine_args} --kv-transfer-config '{"kv_connector":"NixlConnector"}' --tag "{role} {rank}"`)
	if err != nil {
		t.Fatal(err)
	}
	argv := tmpl.Argv(Vars{
		Model: "meta-llama/Llama-3.1-8B", Host: "127.0.0.1", Port: 8123, Role: target.Decode, Rank: 2,
		EngineArgs: engine.Config{MaxNumSeqs: 64}.Args(),
	})
	want := []string{"vllm", "serve", "meta-llama/Llama-3.1-8B", "--host", "127.0.0.1", "--port", "8123",
		"--max-num-seqs", "64", "--kv-transfer-config", `{"kv_connector":"NixlConnector"}`, "--tag", "decode 2"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv =\n%q\nwant\n%q", argv, want)
	}
	if !tmpl.Uses("port") || tmpl.Uses("index") {
		t.Error("Uses is wrong")
	}
}

func TestTemplateErrors(t *testing.T) {
	for tmpl, want := range map[string]string{
		"":                             "empty command",
		"vllm serve --port {prot}":     "unknown placeholder {prot}",
		"vllm serve x{engine_args}":    "must be a separate word",
		`vllm serve "{model}`:          "unterminated",
		`vllm serve \`:                 "trailing backslash",
		"vllm serve --model={Model}":   "unknown placeholder {Model}",
		"  \t ":                        "empty command",
		"serve '{engine_args} --port'": "must be a separate word",
	} {
		_, err := ParseTemplate(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTemplate(%q) = %v, want error containing %q", tmpl, err, want)
		}
	}
}

func TestSplitWordsQuoting(t *testing.T) {
	got, err := splitWords(`a 'b c' "d\"e" f\ g ''`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b c", `d"e`, "f g", ""}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
