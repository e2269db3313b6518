package workload_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// TestLongestNamesTheRequestSent: LongestRequest finds the trace line
// asking the most of the context among the requests the run sends
// (num_prompts cuts the trace), with its file and line.
func TestLongestNamesTheRequestSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(`{"timestamp": 0, "input_length": 100, "output_length": 10}
{"timestamp": 10, "input_length": 900, "output_length": 50}

{"timestamp": 20, "input_length": 300, "output_length": 20}
{"timestamp": 30, "input_length": 5000, "output_length": 20}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	w := workload.Workload{Kind: "trace", Path: path}
	l, err := workload.LongestRequest(w, 0, 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.File != path || l.Line != 5 || l.InputTokens != 5000 || l.OutputTokens != 20 {
		t.Errorf("longest of the whole trace = %+v, want line 5 (5000 + 20 tokens)", l)
	}
	if l, err = workload.LongestRequest(w, 3, 0, "", nil); err != nil {
		t.Fatal(err)
	}
	if l.Line != 2 || l.Tokens() != 950 {
		t.Errorf("longest of the first 3 requests = %+v, want line 2 (950 tokens)", l)
	}
}

// TestLongestCountsConversationHistory: a later multi_turn turn carries
// the earlier prompts and answers, so it is longer than any one message.
func TestLongestCountsConversationHistory(t *testing.T) {
	w := workload.Workload{Kind: "multi_turn", Sessions: 2, Turns: 3, InputLen: 100, OutputLen: 50, History: "synthetic"}
	l, err := workload.LongestRequest(w, 0, 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Tokens() < 3*(100+50) || l.File != "" || l.Line != 0 {
		t.Errorf("longest = %+v, want a third turn of >= 450 tokens, no file", l)
	}
}
