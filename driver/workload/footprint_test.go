package workload

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFootprint(t *testing.T) {
	dir := t.TempDir()
	custom := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(custom, []byte(`{"prompt":"a b c d","output_tokens":7}`+"\n"+`{"prompt":"e f","output_tokens":3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	two := Sim{}.Count("a b c d") + Sim{}.Count("e f")
	for _, tc := range []struct {
		name string
		w    Workload
		n    int
		want Footprint
	}{
		// The top of the length range: 100·1.5.
		{"random", Workload{Kind: Random, InputLen: 100, OutputLen: 10, RangeRatio: 0.5}, 4, Footprint{4, 600, 60}},
		{"shared_prefix natural", Workload{Kind: SharedPrefix, NumGroups: 2, PromptsPerGroup: 3, SystemPromptLen: 50, QuestionLen: 5, OutputLen: 1},
			0, Footprint{6, 6 * 55, 6}},
		// Turn t carries the system prompt, t earlier turns (10 in, 5 out)
		// and its own message: 17 + 32 + 47 per session.
		{"multi_turn", Workload{Kind: MultiTurn, Sessions: 2, Turns: 3, InputLen: 10, OutputLen: 5, SystemPromptLen: 7}, 0, Footprint{6, 2 * 96, 30}},
		{"custom file", Workload{Kind: Custom, Path: custom}, 0, Footprint{2, int64(two), 10}},
		{"custom file oversampled", Workload{Kind: Custom, Path: custom}, 4, Footprint{4, int64(2 * two), 20}},
	} {
		got, err := tc.w.Footprint(tc.n)
		if err != nil || got != tc.want {
			t.Errorf("%s: Footprint = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := (Workload{Kind: Custom, Path: filepath.Join(dir, "missing.jsonl")}).Footprint(0); err == nil {
		t.Error("a missing file must be an error")
	}
}
