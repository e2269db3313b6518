package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// writeJSON answers 200 with v. The length is always set, so an answer is
// complete on the wire once written and flushed, whatever happens to the
// connection afterwards.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, msg: err.Error()})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type permission struct {
		ID                 string  `json:"id"`
		Object             string  `json:"object"`
		Created            int64   `json:"created"`
		AllowCreateEngine  bool    `json:"allow_create_engine"`
		AllowSampling      bool    `json:"allow_sampling"`
		AllowLogprobs      bool    `json:"allow_logprobs"`
		AllowSearchIndices bool    `json:"allow_search_indices"`
		AllowView          bool    `json:"allow_view"`
		AllowFineTuning    bool    `json:"allow_fine_tuning"`
		Organization       string  `json:"organization"`
		Group              *string `json:"group"`
		IsBlocking         bool    `json:"is_blocking"`
	}
	type model struct {
		ID          string       `json:"id"`
		Object      string       `json:"object"`
		Created     int64        `json:"created"`
		OwnedBy     string       `json:"owned_by"`
		Root        string       `json:"root"`
		Parent      *string      `json:"parent"`
		MaxModelLen int          `json:"max_model_len"`
		Permission  []permission `json:"permission"`
	}
	writeJSON(w, map[string]any{"object": "list", "data": []model{{
		ID: s.cfg.model, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.cfg.model,
		MaxModelLen: s.cfg.maxModelLen,
		Permission: []permission{{ID: "modelperm-" + s.id, Object: "model_permission", Created: s.created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*"}},
	}}})
}

// handleTokenize is vLLM's POST /tokenize: {"prompt"} or {"messages"}.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		Prompt   json.RawMessage `json:"prompt"`
		Messages []wireMessage   `json:"messages"`
	}
	if e := readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Model != "" && req.Model != s.cfg.model {
		writeError(w, &apiError{status: http.StatusNotFound, typ: typeNotFound, param: "model", msg: fmt.Sprintf("The model `%s` does not exist.", req.Model)})
		return
	}
	var ids []int
	var e *apiError
	if req.Messages != nil {
		ids, e = chatPrompt(req.Messages)
	} else {
		ids, e = completionPrompt(req.Prompt)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, map[string]any{"count": len(ids), "max_model_len": s.cfg.maxModelLen, "tokens": ids, "token_strs": nil})
}

// handleDetokenize is vLLM's POST /detokenize: {"tokens"} → {"prompt"}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if e := readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Tokens == nil {
		writeError(w, badRequest("tokens", "tokens is required"))
		return
	}
	writeJSON(w, map[string]any{"prompt": tokenizer.Detokenize(req.Tokens)})
}

// handleLoad is vLLM's GET /load: requests in flight in this server.
func (s *Server) handleLoad(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]int64{"server_load": s.load.Load()})
}

// handleGetFaults returns the fault injection state.
func (s *Server) handleGetFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, s.Faults())
}

// handleSetFaults replaces the fault injection state with the body (see
// Faults for the fields; an empty object clears every fault).
func (s *Server) handleSetFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, badRequest("", "reading body: %v", err))
		return
	}
	if err := json.Unmarshal(body, &f); err != nil {
		writeError(w, badRequest("", "faults: %v", err))
		return
	}
	if err := f.Validate(); err != nil {
		writeError(w, badRequest("", "faults: %v", err))
		return
	}
	if f.Crash {
		// The crash cuts every connection, this one included, possibly
		// before the handler returns: the answer must be complete on the
		// wire first (length known, written, flushed), and the client must
		// not reuse the connection.
		w.Header().Set("Connection", "close")
		writeJSON(w, f)
		_ = http.NewResponseController(w).Flush()
	} else {
		writeJSON(w, f)
	}
	s.SetFaults(f)
}

func readJSON(r *http.Request, v any) *apiError {
	body, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonError(err)
	}
	return nil
}
