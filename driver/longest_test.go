package driver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
)

func writeTrace(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLongestNamesTheRequestSent: Longest finds the trace line asking the
// most of the context among the requests the run sends (num_prompts cuts
// the trace), with its file and line.
func TestLongestNamesTheRequestSent(t *testing.T) {
	path := writeTrace(t, `{"timestamp": 0, "input_length": 100, "output_length": 10}
{"timestamp": 10, "input_length": 900, "output_length": 50}

{"timestamp": 20, "input_length": 300, "output_length": 20}
{"timestamp": 30, "input_length": 5000, "output_length": 20}
`)
	cfg := driver.Config{Workload: driver.Workload{Kind: "trace", Path: path}}
	l, err := driver.Longest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.File != path || l.Line != 5 || l.InputTokens != 5000 || l.OutputTokens != 20 {
		t.Errorf("longest of the whole trace = %+v, want line 5 (5000 + 20 tokens)", l)
	}
	cfg.NumPrompts = 3
	if l, err = driver.Longest(cfg); err != nil {
		t.Fatal(err)
	}
	if l.Line != 2 || l.Tokens() != 950 {
		t.Errorf("longest of the first 3 requests = %+v, want line 2 (950 tokens)", l)
	}
}

// TestLongestCountsConversationHistory: a later multi_turn turn carries
// the earlier prompts and answers, so it is longer than any one message.
func TestLongestCountsConversationHistory(t *testing.T) {
	cfg := driver.Config{NumPrompts: 0, Workload: driver.Workload{Kind: "multi_turn", Sessions: 2, Turns: 3, InputLen: 100, OutputLen: 50,
		History: "synthetic"}}
	l, err := driver.Longest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Tokens() < 3*(100+50) || l.File != "" || l.Line != 0 {
		t.Errorf("longest = %+v, want a third turn of >= 450 tokens, no file", l)
	}
}

// TestWarmupIsDrawnFromTheWorkload: each warm-up request has the lengths of
// one of the workload's own requests (never the mean of a mix that no
// request has), and both shapes of a two-shape trace appear.
func TestWarmupIsDrawnFromTheWorkload(t *testing.T) {
	path := writeTrace(t, `{"timestamp": 0, "input_length": 40, "output_length": 3}
{"timestamp": 10, "input_length": 2000, "output_length": 9}
`)
	cfg := driver.Config{BaseURL: "http://127.0.0.1:1", Model: "m", WarmupRequests: 20,
		Workload: driver.Workload{Kind: "trace", Path: path}}
	st, err := driver.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[int]int{3: 40, 9: 2000} // max_tokens → input tokens of the trace's two requests
	seen := map[int]int{}
	for _, w := range st.Warmup {
		in, ok := inputs[w.MaxTokens]
		if !ok || w.InputTokens != in {
			t.Fatalf("warm-up request %d: %d input + %d output tokens, not the shape of any trace request", w.Index, w.InputTokens, w.MaxTokens)
		}
		seen[w.MaxTokens]++
	}
	if seen[3] == 0 || seen[9] == 0 {
		t.Errorf("warm-up shapes %v: want both of the trace's requests drawn", seen)
	}
	if st.Ready.MaxTokens != st.Warmup[0].MaxTokens || st.Ready.InputTokens != st.Warmup[0].InputTokens {
		t.Errorf("ready check %+v is not the first warm-up request", st.Ready)
	}
}
