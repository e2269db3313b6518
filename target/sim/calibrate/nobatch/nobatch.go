// Package nobatch is a small OpenAI-style completions server whose latency
// follows another law than the step model: every request is timed on its
// own (a first token after TTFT plus PerPromptToken per prompt token, then
// one token every TokenGap), with no batching and no contention, the way
// llm-d-inference-sim and similar mock engines behave. Calibration tests
// use it to check that a server the step model does not describe is
// reported as such rather than given a confident profile.
package nobatch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Server answers /v1/models and streaming or plain /v1/completions.
type Server struct {
	Model          string
	TTFT           time.Duration
	PerPromptToken time.Duration
	TokenGap       time.Duration
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": s.Model, "object": "model"}}})
	})
	mux.HandleFunc("POST /v1/completions", s.complete)
	return mux
}

type completionRequest struct {
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
}

// apiError writes vLLM's error shape.
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("body: %v", err))
		return
	}
	switch {
	case req.Model != s.Model:
		apiError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	case req.MaxTokens < 1:
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d", req.MaxTokens))
		return
	}
	prompt := tokenizer.Count(req.Prompt)
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": req.MaxTokens, "total_tokens": prompt + req.MaxTokens}
	fl, _ := w.(http.Flusher)
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	wait := s.TTFT + time.Duration(prompt)*s.PerPromptToken
	text := ""
	for i := range req.MaxTokens {
		if i > 0 {
			wait = s.TokenGap
		}
		t := time.NewTimer(wait)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		word := " " + tokenizer.Word(i%tokenizer.Words())
		if !req.Stream {
			text += word
			continue
		}
		writeEvent(w, map[string]any{"object": "text_completion", "model": s.Model, "choices": []map[string]any{{"index": 0, "text": word, "finish_reason": nil}}})
		if fl != nil {
			fl.Flush()
		}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "text_completion", "model": s.Model,
			"choices": []map[string]any{{"index": 0, "text": text, "finish_reason": "length"}}, "usage": usage})
		return
	}
	writeEvent(w, map[string]any{"object": "text_completion", "model": s.Model, "choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeEvent(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // maps of strings and numbers always marshal
	fmt.Fprintf(w, "data: %s\n\n", b)
}
