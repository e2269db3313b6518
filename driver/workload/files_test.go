package workload

import (
	"os"
	"strings"
	"testing"
)

func TestContentHashFollowsTheBytesNotTheName(t *testing.T) {
	path := writeTrace(t, "conv.jsonl", mooncake)
	w := Workload{Kind: Trace, Path: path}
	h1, err := ContentHash(w)
	if err != nil || len(h1) != 64 {
		t.Fatalf("hash %q, %v", h1, err)
	}
	// One changed line under the same name is another workload.
	changed := strings.Replace(mooncake, `"output_length": 5`, `"output_length": 6`, 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if h2, _ := ContentHash(w); h2 == h1 {
		t.Error("changing one line of the trace left the content hash unchanged")
	}
	// The same bytes under another name are the same workload.
	if h3, _ := ContentHash(Workload{Kind: Trace, Path: writeTrace(t, "other.jsonl", mooncake)}); h3 != h1 {
		t.Error("the same bytes under another name hash differently")
	}
	if h, err := ContentHash(Workload{Kind: Random}); h != "" || err != nil {
		t.Errorf("a workload without files: %q, %v", h, err)
	}
	if _, err := ContentHash(Workload{Kind: Trace, Path: path + ".missing"}); err == nil || !strings.HasPrefix(err.Error(), "path:") {
		t.Errorf("missing file: %v", err)
	}
}

func TestCheckFindsTheLongestRequestAndItsLine(t *testing.T) {
	path := writeTrace(t, "conv.jsonl", mooncake)
	rep, err := Check(Workload{Kind: Trace, Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 4 || rep.Longest.Tokens() != 64 || rep.Longest.Line != 2 || rep.Longest.File != path || rep.Hash == "" {
		t.Errorf("report %+v, want 4 requests, longest 64 tokens on line 2", rep)
	}
	rep, err = Check(Workload{Kind: Trace, Path: writeTrace(t, "a.csv", azure2023)}, nil)
	if err != nil || rep.Longest.Tokens() != 887 || rep.Longest.Line != 4 {
		t.Errorf("azure: %+v, %v; want 887 tokens on line 4", rep, err)
	}
	bad := writeTrace(t, "bad.jsonl", mooncake+`{"input_length": 0, "output_length": 3}`+"\n")
	if _, err := Check(Workload{Kind: Trace, Path: bad}, nil); err == nil || !strings.Contains(err.Error(), "bad.jsonl: line 5: input_length") {
		t.Errorf("a bad line: %v", err)
	}
	if w := (Workload{Kind: Trace, Path: "t/x.jsonl"}).ResolvePaths("/specs"); w.Path != "/specs/t/x.jsonl" {
		t.Errorf("resolved %q", w.Path)
	}
}
