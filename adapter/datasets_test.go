package adapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

const datasetSpec = `
name: ds-%s
seed: %d
target: {kind: sim, profile: fast}
topology:
  replicas: 1
  engine: {model: sim-m, max_num_seqs: 32}
workload:
  %s
  num_prompts: 6
  arrival: {kind: inf}
warmup: {requests: 2}
gate: {reference: none}
`

// TestDatasetsThroughATrial runs each file-based dataset kind through a
// trial: it ends ok, equal seeds send equal streams, different seeds not.
func TestDatasetsThroughATrial(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var conv, custom []string
	burst := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	for i := range 10 {
		conv = append(conv, fmt.Sprintf(`{"conversations":[{"from":"human","value":"question %d about the cache of the model please"},{"from":"gpt","value":"answer %d the cache holds the prefix"}]}`, i, i))
		custom = append(custom, fmt.Sprintf(`{"prompt":"prompt %d for the router","output_tokens":%d}`, i, 2+i%3))
		burst += fmt.Sprintf("%d,GPT-4,%d,%d,0,Conversation log\n", i, 10+i, 3)
	}
	kinds := map[string]string{
		"sharegpt": "kind: sharegpt\n  path: " + write("s.json", "["+strings.Join(conv, ",")+"]"),
		"custom":   "kind: custom\n  path: " + write("c.jsonl", strings.Join(custom, "\n")),
		"burstgpt": "kind: burstgpt\n  path: " + write("b.csv", burst),
		"sonnet":   "kind: sonnet\n  input_len: 100\n  prefix_len: 30\n  output_len: 3",
	}
	r, _ := newTestRunner(t)
	for kind, w := range kinds {
		t.Run(kind, func(t *testing.T) {
			hash := func(seed int) string {
				tr := parseSpec(t, fmt.Sprintf(datasetSpec, kind, seed, w))[0]
				out := runOK(t, r, tr)
				if out.Summary.Completed != 6 {
					t.Fatalf("completed %d, want 6", out.Summary.Completed)
				}
				return out.Summary.StreamHash
			}
			a, b, c := hash(1), hash(1), hash(2)
			if a != b || a == c {
				t.Errorf("stream hashes seed 1: %s, %s; seed 2: %s; want the first two equal, the third different", a, b, c)
			}
		})
	}
}

// TestRefusedReadyCheckIsTyped: a trial whose server refuses the ready
// check (an unknown model) records TargetNotReady with the server's
// message, and measures nothing.
func TestRefusedReadyCheckIsTyped(t *testing.T) {
	r, _ := newTestRunner(t)
	r.hooks.driver = func(c *driver.Config) { c.Model = "nosuch" }
	tr := parseSpec(t, fmt.Sprintf(datasetSpec, "nr", 1, "kind: random\n  input_len: 8\n  output_len: 2"))[0]
	out, err := r.Run(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	nr, ok := out.Failure.(failure.TargetNotReady)
	if out.Status != ledger.StatusFailed || !ok || nr.Status != 404 || !strings.Contains(nr.Message, "nosuch") {
		t.Fatalf("status %s, failure %#v; want failed with TargetNotReady 404 naming the model", out.Status, out.Failure)
	}
	if out.Summary.Completed+out.Summary.Failed != 0 {
		t.Errorf("%d requests measured after a refused ready check", out.Summary.Completed+out.Summary.Failed)
	}
}
