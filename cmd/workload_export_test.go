package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// TestWorkloadExportReimportSendsTheSameRequests exports a seeded
// shared_prefix workload on a Poisson schedule and replays the file as a
// trace: every body, session, max_tokens and gap between sends is equal.
func TestWorkloadExportReimportSendsTheSameRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sp.jsonl")
	args := []string{"--dataset-name", "shared_prefix", "--gsp-num-groups", "3", "--gsp-prompts-per-group", "4",
		"--gsp-system-prompt-len", "40", "--gsp-question-len", "9", "--gsp-output-len", "5",
		"--num-prompts", "12", "--request-rate", "20", "--seed", "4", "--trial-id", "exp"}
	var out, errOut bytes.Buffer
	if code := Main(append([]string{"workload", "export", "--output", path, "--block-size", "16"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "wrote 12 requests") {
		t.Errorf("output %q", out.String())
	}
	orig := generate(t, driver.Workload{Kind: workload.SharedPrefix, NumGroups: 3, PromptsPerGroup: 4, SystemPromptLen: 40, QuestionLen: 9, OutputLen: 5},
		driver.Arrival{RequestRate: 20, Burstiness: 1})
	back := generate(t, driver.Workload{Kind: workload.Trace, Path: path, BlockSize: 16}, driver.Arrival{})
	if len(back.Requests) != len(orig.Requests) {
		t.Fatalf("%d requests back, want %d", len(back.Requests), len(orig.Requests))
	}
	o0, b0 := orig.Requests[0].Offset, back.Requests[0].Offset
	for i, o := range orig.Requests {
		b := back.Requests[i]
		if !bytes.Equal(o.Body, b.Body) || o.Session != b.Session || o.MaxTokens != b.MaxTokens || o.Offset-o0 != b.Offset-b0 {
			t.Fatalf("request %d differs after re-import:\n%s %s %v\n%s %s %v", i, o.Body, o.Session, o.Offset-o0, b.Body, b.Session, b.Offset-b0)
		}
	}
}

func TestWorkloadExportRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset-name", "random", "--num-prompts", "3"}, "--output"},
		{[]string{"--output", filepath.Join(dir, "m.jsonl"), "--dataset-name", "multi_turn", "--num-prompts", "4"}, "multi_turn"},
		{[]string{"--output", filepath.Join(dir, "b.jsonl"), "--block-size", "0"}, "--block-size"},
		{[]string{"--output", filepath.Join(dir, "r.jsonl"), "--random-input-len", "-3"}, "--random-input-len"},
	} {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"workload", "export"}, tc.args...), &out, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", tc.args, code, errOut.String(), tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused exports left files: %v", entries)
	}
}

func generate(t *testing.T, w driver.Workload, a driver.Arrival) *driver.Stream {
	t.Helper()
	st, err := driver.Generate(driver.Config{BaseURL: "http://127.0.0.1:1", Model: exportModel, Workload: w, Arrival: a,
		NumPrompts: 0, Seed: 4, TrialID: "exp", Endpoint: driver.CompletionsEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
