package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// writeDatasets writes a small file of each file-based dataset kind and
// returns the bench flags that select each kind.
func writeDatasets(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var conv []string
	for i := range 12 {
		conv = append(conv, fmt.Sprintf(`{"id":"c%d","conversations":[{"from":"human","value":"Question %d: explain the cache of the model and the router in a few words please"},{"from":"gpt","value":"The answer %d is that the cache keeps the prefix of the prompt in memory for later requests"}]}`, i, i, i))
	}
	conv = append(conv, `{"id":"short","conversations":[{"from":"human","value":"hi"}]}`)
	sharegpt := write("sharegpt.json", "["+strings.Join(conv, ",")+"]")
	burst := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	for i := range 12 {
		burst += fmt.Sprintf("%d,GPT-4,%d,%d,%d,Conversation log\n", i*3, 20+i, 4+i%3, 24+i+i%3)
		burst += fmt.Sprintf("%d,ChatGPT,50,5,55,Conversation log\n", i*3+1)
	}
	burstgpt := write("burstgpt.csv", burst)
	var custom []string
	for i := range 10 {
		custom = append(custom, fmt.Sprintf(`{"prompt":"custom prompt number %d about the model","output_tokens":%d}`, i, 3+i%4))
	}
	customPath := write("custom.jsonl", strings.Join(custom, "\n")+"\n")
	return map[string][]string{
		"sharegpt": {"--dataset-name", "sharegpt", "--dataset-path", sharegpt},
		"sonnet":   {"--dataset-name", "sonnet", "--sonnet-input-len", "120", "--sonnet-prefix-len", "40", "--sonnet-output-len", "4"},
		"burstgpt": {"--dataset-name", "burstgpt", "--dataset-path", burstgpt},
		"custom":   {"--dataset-name", "custom", "--dataset-path", customPath},
	}
}

// TestBenchDatasetsReproducible runs each dataset kind through `autoinfer
// bench` against a simulated engine: every request completes, two runs
// with one seed send the same stream (equal stream and sent hashes), and
// another seed sends another.
func TestBenchDatasetsReproducible(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	for kind, args := range writeDatasets(t) {
		t.Run(kind, func(t *testing.T) {
			run := func(seed string) map[string]any {
				dir := t.TempDir()
				var out, errOut bytes.Buffer
				all := append([]string{"bench", "--base-url", url, "--num-prompts", "6", "--num-warmups", "0", "--seed", seed,
					"--save-result", "--result-dir", dir, "--result-filename", "r.json"}, args...)
				if code := Main(all, &out, &errOut); code != 0 {
					t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
				}
				b, err := os.ReadFile(filepath.Join(dir, "r.json"))
				if err != nil {
					t.Fatal(err)
				}
				var res map[string]any
				if err := json.Unmarshal(b, &res); err != nil {
					t.Fatal(err)
				}
				if res["completed"] != 6.0 || res["failed"] != 0.0 {
					t.Fatalf("completed %v, failed %v; want 6 and 0", res["completed"], res["failed"])
				}
				return res
			}
			a, b, c := run("1"), run("1"), run("2")
			if a["stream_hash"] != b["stream_hash"] || a["sent_hash"] != b["sent_hash"] {
				t.Errorf("same seed, different streams: %v / %v", a["stream_hash"], b["stream_hash"])
			}
			if a["stream_hash"] == c["stream_hash"] {
				t.Errorf("seeds 1 and 2 sent the same stream %v", a["stream_hash"])
			}
			if a["tokenizer_id"] != "autoinfer/sim" {
				t.Errorf("tokenizer_id %v, want autoinfer/sim", a["tokenizer_id"])
			}
		})
	}
}
