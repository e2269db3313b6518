package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// TestBenchRefusesARequestLongerThanTheContext: a custom dataset whose
// third line asks for more tokens than the server's max_model_len (read
// from GET /v1/models) is refused with exit 2 naming the line and the
// limit, before any request is sent; a server with a longer context runs
// it.
func TestBenchRefusesARequestLongerThanTheContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "custom.jsonl")
	data := `{"prompt":"a short prompt","output_tokens":4}
{"prompt":"another short prompt","output_tokens":4}
{"prompt":"a prompt that asks for a long answer","output_tokens":1000}
{"prompt":"the last prompt","output_tokens":4}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	bench := func(maxModelLen int) (int, string) {
		url := simtest.Start(t, sim.Options{Engine: engine.Config{MaxModelLen: maxModelLen}})
		var out, errOut bytes.Buffer
		code := Main([]string{"bench", "--base-url", url, "--num-prompts", "4", "--num-warmups", "0", "--seed", "1",
			"--dataset-name", "custom", "--dataset-path", path, "--request-rate", "inf"}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, out := bench(512)
	if code != ExitUsage {
		t.Fatalf("max_model_len 512: exit %d, want %d\n%s", code, ExitUsage, out)
	}
	for _, want := range []string{path + " line 3", "max_model_len", "context of 512"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Successful requests") {
		t.Errorf("the refused run printed results:\n%s", out)
	}
	if code, out := bench(2048); code != ExitOK {
		t.Errorf("max_model_len 2048: exit %d\n%s", code, out)
	}
}
