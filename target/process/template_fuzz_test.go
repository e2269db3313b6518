package process

import (
	"strings"
	"testing"
)

// Any command template parses or fails with an error, never a panic; a
// parsed one expands to words, and
// {engine_args} stays a word of its own.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{
		"vllm serve {model} --port {port} {engine_args}", `sh -c 'echo "{host}:{port}"'`, "x {nope}", "'unclosed",
		`a\ b "c d" 'e'`, "{engine_args}x", "", "CUDA_VISIBLE_DEVICES={index} run",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := ParseTemplate(s)
		if err != nil {
			return
		}
		argv := tmpl.Argv(Vars{Model: "m", Host: "127.0.0.1", Port: 8000, EngineArgs: []string{"--a", "1"}})
		if len(argv) == 0 {
			t.Fatalf("ParseTemplate(%q) parsed to no words", s)
		}
		for _, a := range argv {
			if strings.Contains(a, "{engine_args}") {
				t.Fatalf("ParseTemplate(%q): argument %q still holds a placeholder", s, a)
			}
		}
	})
}
