package driver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// hashConfigs covers every workload kind and a random arrival schedule.
func hashConfigs(trialID string) []driver.Config {
	base := driver.Config{BaseURL: "http://127.0.0.1:1", Model: "m", Seed: 42, TrialID: trialID, NumPrompts: 40,
		Arrival: driver.Arrival{RequestRate: 20, Burstiness: 0.7}}
	kinds := []driver.Workload{
		{Kind: "random", InputLen: 64, OutputLen: 16, RangeRatio: 0.5, PrefixLen: 32},
		{Kind: "shared_prefix", NumGroups: 4, PromptsPerGroup: 4, SystemPromptLen: 64, QuestionLen: 16, Zipf: 1.1},
		{Kind: "multi_turn", Turns: 3, InputLen: 20, OutputLen: 10, SystemPromptLen: 16, ThinkTimeMs: 100, History: "synthetic"},
		{Kind: "multi_turn", Turns: 3, InputLen: 20, OutputLen: 10},
	}
	out := make([]driver.Config, len(kinds))
	for i, w := range kinds {
		out[i] = base
		out[i].Workload = w
		if i == 2 {
			out[i].Endpoint = driver.ChatEndpoint
		}
	}
	return out
}

func streamHashes(t *testing.T, trialID string) []string {
	var hs []string
	for _, cfg := range hashConfigs(trialID) {
		st, err := driver.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, st.Hash())
	}
	return hs
}

// TestHelperPrintStreamHashes is the child process of
// TestStreamHashAcrossProcesses; it does nothing in a normal test run.
func TestHelperPrintStreamHashes(t *testing.T) {
	trial := os.Getenv("AUTOINFER_DRIVER_HASH_TRIAL")
	if trial == "" {
		t.Skip("child process helper")
	}
	fmt.Printf("HASHES=%s\n", strings.Join(streamHashes(t, trial), ","))
}

// TestStreamHashAcrossProcesses re-runs this test binary as a child process
// and compares the stream hashes it prints with the ones computed here: the
// same (workload, seed, trial id) gives the same stream in another process
// (fresh map seeds, fresh heap). Another trial id changes every hash.
func TestStreamHashAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperPrintStreamHashes$", "-test.v")
	cmd.Env = append(os.Environ(), "AUTOINFER_DRIVER_HASH_TRIAL=trial-a")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	var child string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "HASHES="); ok {
			child = v
		}
	}
	here := streamHashes(t, "trial-a")
	if child != strings.Join(here, ",") {
		t.Fatalf("hashes differ across processes:\nchild %s\nhere  %v", child, here)
	}
	other := streamHashes(t, "trial-b")
	for i := range here {
		if here[i] == other[i] {
			t.Errorf("config %d: trial id did not change the stream hash", i)
		}
	}
	seeded := hashConfigs("trial-a")[0]
	seeded.Seed = 43
	st, err := driver.Generate(seeded)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hash() == here[0] {
		t.Error("seed did not change the stream hash")
	}
}

func promptOf(t *testing.T, body []byte) string {
	var v struct {
		Prompt   string `json:"prompt"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Messages {
		v.Prompt += " " + m.Content
	}
	return strings.TrimSpace(v.Prompt)
}

// TestWarmupNeverOverlapsMeasured: for every workload kind, no warm-up
// prompt shares its first token (hence any prefix-cache block) with a
// measured prompt, the warm-up session ids differ from measured ones, and a
// different warm-up count leaves the measured stream unchanged.
func TestWarmupNeverOverlapsMeasured(t *testing.T) {
	for _, cfg := range hashConfigs("t") {
		cfg.WarmupRequests = 50
		st, err := driver.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Warmup) != 50 {
			t.Fatalf("%d warm-up requests, want 50", len(st.Warmup))
		}
		firsts := map[int]bool{}
		sessions := map[string]bool{}
		for _, r := range st.Requests {
			sessions[r.Session] = true
			if r.Body != nil {
				firsts[tokenizer.Tokenize(promptOf(t, r.Body))[0]] = true
			}
		}
		for _, w := range st.Warmup {
			p := promptOf(t, w.Body)
			if firsts[tokenizer.Tokenize(p)[0]] || sessions[w.Session] {
				t.Fatalf("%s: warm-up request %d overlaps the measured stream (%.30q, session %s)", cfg.Workload.Kind, w.Index, p, w.Session)
			}
			if got := tokenizer.Count(p); got != w.InputTokens {
				t.Errorf("warm-up prompt has %d tokens, request says %d", got, w.InputTokens)
			}
		}
		cfg.WarmupRequests = 7
		again, err := driver.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if again.Hash() != st.Hash() {
			t.Errorf("%s: the warm-up count changed the measured stream", cfg.Workload.Kind)
		}
	}
}

// TestWarmupFinishesBeforeMeasuredRun checks on the wire that every warm-up
// request has been answered before the first measured one arrives, and that
// warm-up requests carry the run id with the warm-up suffix, so a router's
// count for the run id covers exactly the measured requests.
func TestWarmupFinishesBeforeMeasuredRun(t *testing.T) {
	var mu sync.Mutex
	var log []string
	runIDs := map[string]int{} // run-id header → requests
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("X-Session-ID")
		mu.Lock()
		runIDs[r.Header.Get("X-Run-ID")]++
		log = append(log, "start "+session)
		mu.Unlock()
		// "end" is logged before the response is written, so the client
		// cannot finish a request the log has not seen end.
		mu.Lock()
		log = append(log, "end "+session)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"ok\"}]}\n\ndata: [DONE]\n\n")
	})
	cfg := driver.Config{BaseURL: url, Model: "m", NumPrompts: 20, WarmupRequests: 30, ReadyCheckTimeout: -1, TrialID: "w",
		Workload: driver.Workload{Kind: "random", InputLen: 16, OutputLen: 1}, Arrival: driver.Arrival{MaxConcurrency: 8}}
	res, err := driver.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != 20 || res.Summary.WarmupRequests != 30 || res.WarmupFailed != 0 {
		t.Fatalf("summary %+v, warm-up failures %d", res.Summary, res.WarmupFailed)
	}
	mu.Lock()
	defer mu.Unlock()
	warmEnds, measuredSeen := 0, false
	for _, e := range log {
		warm := strings.Contains(e, "-warmup-")
		switch {
		case warm && measuredSeen:
			t.Fatalf("warm-up event %q after a measured request started", e)
		case warm && strings.HasPrefix(e, "end"):
			warmEnds++
		case !warm:
			measuredSeen = true
		}
	}
	if warmEnds != 30 {
		t.Fatalf("%d warm-up requests ended, want 30", warmEnds)
	}
	if want := map[string]int{"w": 20, "w" + driver.WarmupRunIDSuffix: 30}; fmt.Sprint(runIDs) != fmt.Sprint(want) {
		t.Errorf("requests by X-Run-ID %v, want %v", runIDs, want)
	}
}
