package workload

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target/tokenizer"
	"github.com/autoinfer/autoinfer/trials/field"
)

func testSource(seed uint64) Source {
	return func(purpose string, index int) *rand.Rand {
		h := seed
		for _, c := range purpose {
			h = h*31 + uint64(c)
		}
		return rand.New(rand.NewPCG(h, uint64(index)))
	}
}

func TestRandomExactTokenCounts(t *testing.T) {
	w := Workload{Kind: Random, InputLen: 100, OutputLen: 20, RangeRatio: 0.5, PrefixLen: 30}
	items, err := Build(w, 200, testSource(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := testSource(1)("prefix", 0)
	r.Uint64() // a shared part's key comes first (generator.shared)
	prefix := Sim{}.Generate(r, 30)
	for i, it := range items {
		if got := tokenizer.Count(it.Prompt); got != it.InputTokens {
			t.Fatalf("item %d: prompt has %d tokens, item says %d", i, got, it.InputTokens)
		}
		if in := it.InputTokens - 30; in < 50 || in > 150 {
			t.Errorf("item %d: input length %d outside [50, 150]", i, in)
		}
		if it.OutputTokens < 10 || it.OutputTokens > 30 {
			t.Errorf("item %d: output length %d outside [10, 30]", i, it.OutputTokens)
		}
		if !strings.HasPrefix(it.Prompt, prefix+" ") {
			t.Fatalf("item %d does not start with the shared prefix", i)
		}
	}
}

func TestBuildIsSeededAndPrefixStable(t *testing.T) {
	w := Workload{Kind: Random, InputLen: 50, OutputLen: 5, RangeRatio: 0.2}
	a, _ := Build(w, 20, testSource(7), nil)
	b, _ := Build(w, 10, testSource(7), nil)
	c, _ := Build(w, 20, testSource(8), nil)
	for i := range b {
		if a[i] != b[i] {
			t.Fatalf("item %d changed with the number of items", i)
		}
	}
	if a[0].Prompt == c[0].Prompt {
		t.Fatal("a different source gave the same prompt")
	}
}

func TestSharedPrefixGroups(t *testing.T) {
	w := Workload{Kind: SharedPrefix, NumGroups: 4, PromptsPerGroup: 3, SystemPromptLen: 40, QuestionLen: 10, OutputLen: 7}
	items, err := Build(w, 0, testSource(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 12 {
		t.Fatalf("%d items, want groups × prompts per group = 12", len(items))
	}
	pairs := map[string]bool{}
	systems := map[string]int{}
	for _, it := range items {
		if tokenizer.Count(it.System) != 40 || tokenizer.Count(it.Prompt) != 10 || it.InputTokens != 50 || it.OutputTokens != 7 {
			t.Fatalf("lengths wrong: %+v", it)
		}
		pairs[it.System+"|"+it.Prompt] = true
		systems[it.System]++
	}
	if len(pairs) != 12 || len(systems) != 4 {
		t.Fatalf("%d distinct prompts in %d groups, want 12 in 4", len(pairs), len(systems))
	}
	for s, n := range systems {
		if n != 3 {
			t.Errorf("group %.20q used %d times, want 3", s, n)
		}
	}
}

// TestSharedPrefixZipf checks popularity: with s = 1.2 over 8 groups rank 1
// has probability 1/H ≈ 0.39 and rank 8 ≈ 0.03; 4,000 draws put the
// observed shares within ±0.03 of these (≥ 3.8 standard errors).
func TestSharedPrefixZipf(t *testing.T) {
	w := Workload{Kind: SharedPrefix, NumGroups: 8, PromptsPerGroup: 2, SystemPromptLen: 5, QuestionLen: 3, Zipf: 1.2}
	items, err := Build(w, 4000, testSource(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	cdf := zipfCDF(8, 1.2)
	byGroup := map[string]int{}
	for _, it := range items {
		byGroup[it.System]++
	}
	first := Sim{}.Generate(testSource(5)("group", 0), 5)
	last := Sim{}.Generate(testSource(5)("group", 7), 5)
	p0, p7 := cdf[0], cdf[7]-cdf[6]
	if got := float64(byGroup[first]) / 4000; got < p0-0.03 || got > p0+0.03 {
		t.Errorf("rank 1 share %.3f, want %.3f", got, p0)
	}
	if got := float64(byGroup[last]) / 4000; got < p7-0.03 || got > p7+0.03 {
		t.Errorf("rank 8 share %.3f, want %.3f", got, p7)
	}
}

func TestMultiTurnSessions(t *testing.T) {
	w := Workload{Kind: MultiTurn, Turns: 3, InputLen: 20, OutputLen: 8, SystemPromptLen: 12, ThinkTimeMs: 250, History: HistorySynthetic}
	items, err := Build(w, 7, testSource(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 7 {
		t.Fatalf("%d items, want 7 (3 sessions of 3 turns truncated)", len(items))
	}
	for i, it := range items {
		s, turn := i/3, i%3
		if it.Session != s*3 || it.Turn != turn {
			t.Fatalf("item %d: session %d turn %d, want %d %d", i, it.Session, it.Turn, s*3, turn)
		}
		if turn == 0 && (it.Prev != -1 || tokenizer.Count(it.System) != 12 || it.InputTokens != 32) {
			t.Fatalf("first turn %d wrong: %+v", i, it)
		}
		if turn > 0 && (it.Prev != i-1 || it.System != "" || it.Think.Milliseconds() != 250 || it.InputTokens != 20) {
			t.Fatalf("later turn %d wrong: %+v", i, it)
		}
		if tokenizer.Count(it.Answer) != 8 {
			t.Fatalf("synthetic answer of item %d has %d tokens, want 8", i, tokenizer.Count(it.Answer))
		}
	}
}

func TestTraceReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	data := `{"timestamp": 1000, "input_length": 600, "output_length": 4, "hash_ids": [7, 8], "session_id": "a"}
{"timestamp": 1500, "input_length": 1100, "output_length": 5, "hash_ids": [7, 9]}

{"timestamp": 3000, "prompt": "hello world.", "output_length": 6, "session_id": "a"}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	w := Workload{Kind: Trace, Path: path, BlockSize: 512, TimeScale: 2}
	items, err := Build(w, 0, testSource(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("%d items, want 3", len(items))
	}
	for i, want := range []int{600, 1100, 3} {
		if got := tokenizer.Count(items[i].Prompt); got != want || items[i].InputTokens != want {
			t.Errorf("item %d: %d tokens (item says %d), want %d", i, got, items[i].InputTokens, want)
		}
	}
	b0 := strings.Fields(items[0].Prompt)[:400]
	b1 := strings.Fields(items[1].Prompt)[:400]
	if strings.Join(b0, " ") != strings.Join(b1, " ") {
		t.Error("requests sharing hash id 7 do not share their first block")
	}
	if items[1].Offset.Milliseconds() != 250 || items[2].Offset.Milliseconds() != 1000 || !items[2].Timed {
		t.Errorf("offsets %v %v, want 250ms and 1s (time_scale 2)", items[1].Offset, items[2].Offset)
	}
	if items[2].Session != 0 || items[1].Session != 1 {
		t.Errorf("sessions %d %d, want 0 (shared with item 0) and 1", items[2].Session, items[1].Session)
	}
	if _, err := Build(w, 4, testSource(1), nil); err == nil || !strings.HasPrefix(err.Error(), "num_prompts:") {
		t.Errorf("asking for more requests than the trace has: %v", err)
	}
}

func TestTraceErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"input_length": 5, "output_length": 1, "prio": 3}`, "line 1"},
		{"{\"input_length\": 5, \"output_length\": 1}\n{\"input_length\": 5}", "line 2: output_length"},
		{`{"prompt": "x", "hash_ids": [1], "output_length": 1}`, "line 1: prompt"},
		{`{"input_length": -2, "output_length": 1}`, "line 1: input_length"},
		{"{\"timestamp\": 5, \"input_length\": 2, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 2, \"output_length\": 1}", "line 2: timestamp"},
	} {
		_, err := ReadTrace(strings.NewReader(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.data, err, tc.want)
		}
	}
}

func TestValidateAndParseNameTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"kind: random\ninput_len: -3\n", "input_len:"},
		{"kind: random\nrange_ratio: 1.5\n", "range_ratio:"},
		{"kind: random\nquestion_len: 5\n", "question_len: not a knob of kind random"},
		{"kind: sharded\n", "kind:"},
		{"kind: multi_turn\nhistory: real\n", "history:"},
		{"kind: trace\n", "path:"},
		{"kind: random\ninput_lenn: 5\n", "input_lenn"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
	w, err := Parse([]byte("kind: shared_prefix\nnum_groups: 3\nzipf: 1.1\n"))
	if err != nil || w.NumGroups != 3 || w.Zipf != 1.1 {
		t.Fatalf("valid workload: %+v, %v", w, err)
	}
}

// Every problem of Validate, and of building a workload's requests, is a
// *field.Error naming the key: the spec parser nests them, splitting no
// "key: message" string.
func TestValidateReportsFieldErrors(t *testing.T) {
	w := Workload{Kind: Random, InputLen: -3, RangeRatio: 1.5, QuestionLen: 5, Headers: map[string]string{"Authorization": "x"}}
	paths, err := field.Paths(w.Validate())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"question_len", "input_len", "range_ratio", "headers"}; !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	for _, c := range []struct {
		w    Workload
		n    int
		path string
	}{
		{Workload{Kind: Random}, 0, "num_prompts"},
		{Workload{Kind: Trace, Path: filepath.Join(t.TempDir(), "missing.jsonl")}, 0, "path"},
		{Workload{Kind: MultiTurn}, 0, "sessions"},
	} {
		_, err := BuildItems(c.w, c.n, testSource(1), nil)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Path != c.path {
			t.Errorf("BuildItems(%s): %v, want a *field.Error at %s", c.w.Kind, err, c.path)
		}
	}
}

// TestSizesAgreeWithAt: the lengths Sizes reports without building a
// request are the ones At draws, with drawn lengths (range_ratio 0.5) and
// with fixed ones (range_ratio 0, which Sizes answers without a draw), and
// with an input length of 0, which both read as 1.
func TestSizesAgreeWithAt(t *testing.T) {
	for _, w := range []Workload{
		{Kind: Random, InputLen: 100, OutputLen: 20, RangeRatio: 0.5, PrefixLen: 30},
		{Kind: Random, InputLen: 100, OutputLen: 20, PrefixLen: 30},
		{Kind: Random, InputLen: 0, OutputLen: 7},
	} {
		items, err := BuildItems(w, 50, testSource(3), nil)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := items.(interface{ Sizes(int) (int, int) })
		if !ok {
			t.Fatalf("random items of %+v have no Sizes", w)
		}
		for i := range items.Len() {
			it := items.At(i)
			if in, out := s.Sizes(i); in != it.InputTokens || out != it.OutputTokens {
				t.Fatalf("%+v item %d: Sizes says %d in, %d out; At built %d in, %d out", w, i, in, out, it.InputTokens, it.OutputTokens)
			}
		}
	}
}
