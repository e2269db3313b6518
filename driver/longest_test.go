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
