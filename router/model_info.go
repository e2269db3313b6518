package router

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/autoinfer/autoinfer/router/policy"
)

// ModelInfo is GET /get_model_info. vllm-router relays SGLang's
// /get_model_info, which vLLM does not serve; the router builds it from a
// worker's GET /v1/models, so it holds only what vLLM states there (no
// tokenizer path, no is_generation).
type ModelInfo struct {
	ModelPath       string `json:"model_path"`        // the model's root (its path or hub id)
	ServedModelName string `json:"served_model_name"` // the id clients send as "model"
	MaxModelLen     int    `json:"max_model_len,omitempty"`
	Worker          string `json:"worker"` // the worker asked
}

// getModelInfo asks the least-loaded available worker that serves client
// requests (a decode worker in PD mode), holding its load for the call.
func (r *Router) getModelInfo(w http.ResponseWriter, req *http.Request) {
	pool := r.pool
	if r.pd != nil {
		pool = r.pd.decode
	}
	t, _, ok := pool.pick(r.anyWorker, policy.Request{}, false)
	if !ok {
		writeError(w, newAPIError(http.StatusServiceUnavailable, ErrTypeNoAvailableWorkers,
			"no available worker in pool "+strconv.Quote(pool.name)))
		return
	}
	info, err := r.modelInfo(req.Context(), pool, t)
	if err != nil {
		writeError(w, newAPIError(http.StatusBadGateway, ErrTypeUpstreamError, "model info from "+t.w.url+": "+err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (r *Router) modelInfo(ctx context.Context, pool *Pool, t target) (ModelInfo, error) {
	g := pool.acquire(t)
	defer g.Release()
	ctx, cancel := context.WithTimeout(ctx, secs(r.cfg.HealthCheck.TimeoutSecs))
	defer cancel()
	status, body, err := r.call(ctx, http.MethodGet, t.w.url+"/v1/models", nil, nil)
	if err != nil {
		return ModelInfo{}, err
	}
	if status != http.StatusOK {
		return ModelInfo{}, &statusError{status, snippet(body)}
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 || list.Data[0].ID == "" {
		return ModelInfo{}, &statusError{status, "no model in /v1/models: " + snippet(body)}
	}
	m := list.Data[0]
	info := ModelInfo{ModelPath: m.Root, ServedModelName: m.ID, MaxModelLen: m.MaxModelLen, Worker: t.w.url}
	if info.ModelPath == "" {
		info.ModelPath = m.ID
	}
	return info, nil
}

// statusError is a worker's unexpected answer.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.status) + ": " + e.body }
