package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

type chatReq struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// deterministicChat answers like an engine at temperature 0: the answer is
// a function of the conversation only. It records each request's messages
// by session header, in arrival order.
type deterministicChat struct {
	mu       sync.Mutex
	sessions map[string][]chatReq
}

func answerFor(c chatReq) string {
	last := c.Messages[len(c.Messages)-1].Content
	return fmt.Sprintf("answer %d about %s", len(c.Messages), strings.Fields(last)[0])
}

func (d *deterministicChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var c chatReq
	if err := json.Unmarshal(b, &c); err != nil || len(c.Messages) == 0 {
		http.Error(w, `{"error":{"type":"BadRequest","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.sessions[r.Header.Get("X-Session-ID")] = append(d.sessions[r.Header.Get("X-Session-ID")], c)
	d.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
	for i, word := range strings.Fields(answerFor(c)) {
		if i > 0 {
			word = " " + word
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", word)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestMultiTurnActualHistory: each later turn carries the earlier user
// turns and the server's actual answers, all turns of a session share one
// session id, a turn is due think time after the previous one ended, and —
// because the server is deterministic, like the simulated engine at
// temperature 0 — two runs send byte-identical requests (equal sent hashes).
func TestMultiTurnActualHistory(t *testing.T) {
	run := func(trial string) (*driver.Result, *deterministicChat) {
		d := &deterministicChat{sessions: map[string][]chatReq{}}
		cfg := driver.Config{BaseURL: serve(t, d.ServeHTTP), Endpoint: driver.ChatEndpoint, Model: "m", TrialID: trial, WarmupRequests: -1, ReadyCheckTimeout: -1,
			Workload: driver.Workload{Kind: "multi_turn", Sessions: 3, Turns: 3, InputLen: 6, OutputLen: 5, SystemPromptLen: 4, ThinkTimeMs: 20}}
		res, err := driver.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res, d
	}
	res, d := run("mt")
	if res.Summary.Completed != 9 || len(d.sessions) != 3 {
		t.Fatalf("completed %d in %d sessions, want 9 in 3", res.Summary.Completed, len(d.sessions))
	}
	for s := range 3 {
		id := fmt.Sprintf("autoinfer-mt-%d", s*3)
		turns := d.sessions[id]
		if len(turns) != 3 {
			t.Fatalf("session %s got %d requests, want 3", id, len(turns))
		}
		for k, c := range turns {
			if len(c.Messages) != 2+2*k || c.Messages[0].Role != "system" {
				t.Fatalf("session %s turn %d: %d messages, want system + %d", id, k, len(c.Messages), 1+2*k)
			}
			if k > 0 {
				prev := turns[k-1]
				for m := range prev.Messages {
					if c.Messages[m] != prev.Messages[m] {
						t.Fatalf("session %s turn %d does not extend the previous conversation", id, k)
					}
				}
				if a := c.Messages[len(prev.Messages)]; a.Role != "assistant" || a.Content != answerFor(prev) {
					t.Fatalf("session %s turn %d: history holds %+v, want the actual answer %q", id, k, a, answerFor(prev))
				}
			}
		}
	}
	for i := 1; i < 9; i++ {
		r, prev := res.Requests[i], res.Requests[i-1]
		if r.Turn == 0 {
			continue
		}
		if r.SessionID != prev.SessionID || r.IntendedMs < prev.SendMs+prev.E2ELMs+20 {
			t.Errorf("turn %d of %s intended at %.3f ms, before the previous end %.3f + 20 ms think",
				r.Turn, r.SessionID, r.IntendedMs, prev.SendMs+prev.E2ELMs)
		}
		if want := tokenizer.Count(strings.Join(func() []string {
			var parts []string
			for _, m := range d.sessions[r.SessionID][r.Turn].Messages {
				parts = append(parts, m.Content)
			}
			return parts
		}(), " ")); r.InputTokens != want {
			t.Errorf("request %d: input tokens %d, want %d (the whole conversation)", i, r.InputTokens, want)
		}
	}
	again, _ := run("mt")
	if again.Summary.SentHash != res.Summary.SentHash || again.Summary.StreamHash != res.Summary.StreamHash {
		t.Error("two runs against a deterministic server sent different bytes")
	}
	other, _ := run("mt2")
	if other.Summary.SentHash == res.Summary.SentHash {
		t.Error("another trial id sent the same bytes")
	}
}

// TestMultiTurnAbortsSessionAfterFailure: when a turn fails, the session's
// later turns are never sent and count as failed session_aborted.
func TestMultiTurnAbortsSessionAfterFailure(t *testing.T) {
	d := &deterministicChat{sessions: map[string][]chatReq{}}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Session-ID") == "autoinfer-f-0" {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, `{"error":{"type":"WorkerUnavailable","message":"down"}}`)
			return
		}
		d.ServeHTTP(w, r)
	})
	cfg := driver.Config{BaseURL: url, Endpoint: driver.ChatEndpoint, Model: "m", TrialID: "f", WarmupRequests: -1, ReadyCheckTimeout: -1,
		Workload: driver.Workload{Kind: "multi_turn", Sessions: 2, Turns: 3, InputLen: 4, OutputLen: 3}}
	res, err := driver.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Completed != 3 || s.Failed != 3 || s.ErrorsByType["WorkerUnavailable"] != 1 || s.ErrorsByType["session_aborted"] != 2 || s.ErrorsByStatus["no_response"] != 2 {
		t.Fatalf("completed %d failed %d by type %v by status %v", s.Completed, s.Failed, s.ErrorsByType, s.ErrorsByStatus)
	}
	if res.Requests[1].Sent || res.Requests[2].Sent {
		t.Error("turns after the failed one were sent")
	}
}
