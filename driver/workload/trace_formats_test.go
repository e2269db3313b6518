package workload

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

func writeTrace(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// firstTokens returns the first n token ids of a prompt (sim tokenizer).
func firstTokens(p string, n int) string { return fmt.Sprint(tokenizer.Tokenize(p)[:n]) }

// mooncake is a Mooncake conversation-trace excerpt: no session ids; lines
// 1, 2 and 4 share block 10 (one conversation), line 3 starts elsewhere.
const mooncake = `{"timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [10, 11]}
{"timestamp": 2000, "input_length": 60, "output_length": 4, "hash_ids": [10, 11, 12]}
{"timestamp": 3000, "input_length": 30, "output_length": 5, "hash_ids": [20, 21]}
{"timestamp": 6000, "input_length": 45, "output_length": 6, "hash_ids": [10, 13, 14]}
`

func TestMooncakeTraceSharedHashIDsSessionsAndSlicing(t *testing.T) {
	path := writeTrace(t, "conv.jsonl", mooncake)
	w := Workload{Kind: Trace, Path: path, BlockSize: 20, TimeScale: 2, SessionPrefixBlocks: 1}
	items, err := Build(w, 0, testSource(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{40, 60, 30, 45} {
		if items[i].InputTokens != want || tokenizer.Count(items[i].Prompt) != want {
			t.Errorf("item %d: %d tokens, want %d", i, items[i].InputTokens, want)
		}
	}
	if firstTokens(items[0].Prompt, 40) != firstTokens(items[1].Prompt, 40) {
		t.Error("lines sharing hash ids [10, 11] do not share their first 40 tokens")
	}
	if firstTokens(items[3].Prompt, 20) != firstTokens(items[0].Prompt, 20) || firstTokens(items[3].Prompt, 21) == firstTokens(items[0].Prompt, 21) {
		t.Error("line 4 shares block 10 only, but its prompt does not share exactly the first 20 tokens")
	}
	if firstTokens(items[2].Prompt, 5) == firstTokens(items[0].Prompt, 5) {
		t.Error("line 3 has other hash ids but starts like line 1")
	}
	if got := []int{items[0].Session, items[1].Session, items[2].Session, items[3].Session}; got[1] != 0 || got[3] != 0 || got[2] != 2 {
		t.Errorf("sessions derived from the first block: %v, want [0 0 2 0]", got)
	}
	if items[1].Offset != time.Second || items[3].Offset != 3*time.Second {
		t.Errorf("offsets %v, %v; want 1s and 3s (time_scale 2)", items[1].Offset, items[3].Offset)
	}

	// Without session_prefix_blocks every line is its own session.
	w.SessionPrefixBlocks = 0
	if items, _ = Build(w, 0, testSource(1), nil); items[1].Session != 1 {
		t.Errorf("no session derivation: item 1 in session %d, want 1", items[1].Session)
	}

	// The window [1.5 s, 5 s) keeps lines 2 and 3; offsets restart at its first.
	w.WindowStartS, w.WindowEndS, w.TimeScale = 1.5, 5, 1
	items, err = Build(w, 0, testSource(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].InputTokens != 60 || items[1].InputTokens != 30 || items[1].Offset != time.Second {
		t.Fatalf("window: %d items (first %d tokens), second offset %v; want lines 2 and 3, 1s apart", len(items), items[0].InputTokens, items[1].Offset)
	}
	// A request count takes the first lines of the window.
	if items, err = Build(w, 1, testSource(1), nil); err != nil || len(items) != 1 || items[0].InputTokens != 60 {
		t.Fatalf("window + num_prompts 1: %v items, %v", len(items), err)
	}
	if _, err := Build(w, 3, testSource(1), nil); err == nil || !strings.Contains(err.Error(), "in the window") {
		t.Errorf("more requests than the window holds: %v", err)
	}
}

func TestMooncakePromptsAreByteReproducible(t *testing.T) {
	path := writeTrace(t, "conv.jsonl", mooncake)
	w := Workload{Kind: Trace, Path: path, BlockSize: 20}
	a, err1 := Build(w, 0, testSource(7), nil)
	b, err2 := Build(w, 0, testSource(7), nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range a {
		if a[i].Prompt != b[i].Prompt {
			t.Fatalf("item %d differs between two builds with one seed", i)
		}
	}
}

const azure2023 = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.0000000,879,8
2023-11-16 18:15:56.6805900,91,20
`

func TestAzureTraceParsesDetectsSlicesAndScales(t *testing.T) {
	path := writeTrace(t, "azure.csv", azure2023)
	w := Workload{Kind: Trace, Path: path} // format detected
	items, err := Build(w, 0, testSource(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 || items[2].InputTokens != 879 || items[2].OutputTokens != 8 {
		t.Fatalf("%d items, item 2 %d/%d tokens; want 4 items, 879/8", len(items), items[2].InputTokens, items[2].OutputTokens)
	}
	if items[1].Offset != 4314579*time.Microsecond || items[3].Offset != 10*time.Second {
		t.Errorf("offsets %v %v, want 4.314579s and 10s", items[1].Offset, items[3].Offset)
	}
	w.TimeScale, w.WindowStartS, w.WindowEndS = 4, 4, 9
	if items, err = Build(w, 0, testSource(1), nil); err != nil {
		t.Fatal(err)
	}
	// The window is in trace time (before scaling): rows 2 and 3.
	if len(items) != 2 || items[0].InputTokens != 396 || items[1].Offset != 1207750*time.Nanosecond {
		t.Errorf("window [4s, 9s) at time_scale 4: %d items, offset %v", len(items), items[len(items)-1].Offset)
	}

	// The 2024 traces' timestamps carry a zone; extra columns are ignored.
	path = writeTrace(t, "azure24.csv", "TIMESTAMP,ContextTokens,GeneratedTokens,Extra\n"+
		"2024-05-10 00:00:00.009930+00:00,2162,5,x\n2024-05-10 00:00:00.509930+00:00,100,1,y\n")
	if items, err = Build(Workload{Kind: Trace, Path: path, Format: FormatAzure}, 0, testSource(1), nil); err != nil || items[1].Offset != 500*time.Millisecond {
		t.Fatalf("2024 layout: %v, %v", items, err)
	}
	if _, err := Build(Workload{Kind: Trace, Path: path, Format: FormatAzure, SessionPrefixBlocks: 1}, 0, testSource(1), nil); err == nil ||
		!strings.Contains(err.Error(), "session_prefix_blocks") {
		t.Errorf("session_prefix_blocks on azure: %v", err)
	}
}

func TestTraceFileErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct{ name, data, format, want string }{
		{"a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:47.00,0,4\n", "", "a.csv: line 3: ContextTokens"},
		{"b.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,0\n", "", "b.csv: line 2: GeneratedTokens"},
		{"c.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,374,3\n", "", "c.csv: line 2: TIMESTAMP"},
		{"d.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47,3,4\n2023-11-16 18:15:46,3,4\n", "", "d.csv: line 3: timestamp"},
		{"e.jsonl", "\n{\"input_length\": 4, \"output_length\": 0}\n", "", "e.jsonl: line 2: output_length"},
		{"f.jsonl", "\n\nTimestamp,Model\n", "", "f.jsonl: line 3: format"},
		{"g.jsonl", `{"input_length": 4, "output_length": 1}`, FormatAzure, "g.jsonl: line 1: reading the header"},
		{"h.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n", FormatMooncake, "h.csv: line 1"},
	} {
		path := writeTrace(t, tc.name, tc.data)
		_, err := Build(Workload{Kind: Trace, Path: path, Format: tc.format}, 0, testSource(1), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "path: ") {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse([]byte("kind: trace\npath: x\nformat: parquet\nwindow_end_s: 1\nwindow_start_s: 2\n")); err == nil ||
		!strings.Contains(err.Error(), "format:") || !strings.Contains(err.Error(), "window_end_s:") {
		t.Errorf("bad format and window: %v", err)
	}
}

func TestExportThenReimportGivesTheSameRequests(t *testing.T) {
	w := Workload{Kind: SharedPrefix, NumGroups: 3, PromptsPerGroup: 4, SystemPromptLen: 50, QuestionLen: 12, OutputLen: 7}
	orig, err := Build(w, 0, testSource(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]ExportRequest, len(orig))
	for i, it := range orig {
		reqs[i] = ExportRequest{Prompt: join(it.System, it.Prompt), OutputTokens: it.OutputTokens,
			Offset: time.Duration(i) * 1234567 * time.Nanosecond, Session: "s" + string(rune('a'+i%5))}
	}
	for _, prompts := range []bool{true, false} {
		var buf bytes.Buffer
		if err := WriteMooncakeTrace(&buf, reqs, nil, ExportOptions{BlockSize: 16, Prompts: prompts}); err != nil {
			t.Fatal(err)
		}
		path := writeTrace(t, "export.jsonl", buf.String())
		back, err := Build(Workload{Kind: Trace, Path: path, BlockSize: 16}, 0, testSource(99), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(orig) {
			t.Fatalf("prompts=%v: %d requests back, want %d", prompts, len(back), len(orig))
		}
		for i := range back {
			b := back[i]
			if b.InputTokens != orig[i].InputTokens || b.OutputTokens != orig[i].OutputTokens || b.Offset != reqs[i].Offset || !b.Timed {
				t.Fatalf("prompts=%v item %d: %d/%d tokens at %v, want %d/%d at %v", prompts, i, b.InputTokens, b.OutputTokens, b.Offset,
					orig[i].InputTokens, orig[i].OutputTokens, reqs[i].Offset)
			}
			if b.Session != i%5 && i >= 5 || i < 5 && b.Session != i {
				t.Fatalf("prompts=%v item %d: session %d, want %d", prompts, i, b.Session, i%5)
			}
			if prompts && b.Prompt != reqs[i].Prompt {
				t.Fatalf("item %d: prompt differs after re-import", i)
			}
			// Shared system prompts (50 tokens = 3 full blocks of 16) stay shared.
			for j := range i {
				same := orig[i].System == orig[j].System
				if got := firstTokens(b.Prompt, 48) == firstTokens(back[j].Prompt, 48); got != same {
					t.Fatalf("prompts=%v items %d, %d: share their first blocks %v, originally %v", prompts, j, i, got, same)
				}
			}
		}
	}
}
