package router

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// member is one worker with the pool it belongs to.
type member struct {
	pool *Pool
	w    *Worker
}

// WorkerResult is one worker's answer to a fan-out route.
type WorkerResult struct {
	URL    string `json:"url"`
	Pool   string `json:"pool"`
	Status int    `json:"status,omitempty"` // the worker's HTTP status; 0 when it did not answer
	Error  string `json:"error,omitempty"`
}

func (res WorkerResult) ok() bool { return res.Error == "" }

// FanOutResponse is the answer of /flush_cache and /health_generate when
// every worker succeeded.
type FanOutResponse struct {
	Status  string         `json:"status"`
	Workers []WorkerResult `json:"workers"`
}

// fanOut runs f on every worker of every pool at once, each bounded by
// health_check.timeout_secs, and returns the results in pool and URL order.
func (r *Router) fanOut(ctx context.Context, f func(ctx context.Context, m member) WorkerResult) []WorkerResult {
	var ms []member
	for _, p := range r.pools {
		for _, w := range p.Workers() {
			ms = append(ms, member{p, w})
		}
	}
	out := make([]WorkerResult, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, secs(r.cfg.HealthCheck.TimeoutSecs))
			defer cancel()
			out[i] = f(cctx, m)
			out[i].URL, out[i].Pool = m.w.url, m.pool.name
		})
	}
	wg.Wait()
	return out
}

// answerFanOut writes 200 with every result, or failStatus naming the
// workers that failed; 503 when there is no worker at all.
func answerFanOut(w http.ResponseWriter, results []WorkerResult, okStatus string, failStatus int, what string) {
	if len(results) == 0 {
		writeError(w, newAPIError(http.StatusServiceUnavailable, ErrTypeNoAvailableWorkers, what+": the router has no workers"))
		return
	}
	var failed []string
	for _, res := range results {
		if !res.ok() {
			failed = append(failed, res.URL+" ("+res.Pool+"): "+res.Error)
		}
	}
	if len(failed) > 0 {
		writeError(w, newAPIError(failStatus, ErrTypeUpstreamError,
			fmt.Sprintf("%s failed on %d of %d workers: %s", what, len(failed), len(results), strings.Join(failed, "; "))))
		return
	}
	writeJSON(w, http.StatusOK, FanOutResponse{Status: okStatus, Workers: results})
}

// call sends one request to a worker and reads at most 1 MiB of the answer.
func (r *Router) call(ctx context.Context, method, url string, body []byte, header http.Header) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// flushCache is POST /flush_cache: vLLM's POST /reset_prefix_cache on every
// worker (vllm-router sends SGLang's /flush_cache, which vLLM does not
// serve). vLLM answers 200 even when it refused because requests were
// running, so 200 here means every worker accepted the call, not that every
// cache is empty. A worker that accepted is dropped from the cache_aware
// tree, whose picture of its cache would otherwise be stale.
func (r *Router) flushCache(w http.ResponseWriter, req *http.Request) {
	results := r.fanOut(req.Context(), func(ctx context.Context, m member) WorkerResult {
		status, body, err := r.call(ctx, http.MethodPost, m.w.url+"/reset_prefix_cache", nil, nil)
		switch {
		case err != nil:
			return WorkerResult{Error: err.Error()}
		case status == http.StatusNotFound:
			return WorkerResult{Status: status, Error: "404: vLLM serves /reset_prefix_cache only with VLLM_SERVER_DEV_MODE=1"}
		case status != http.StatusOK:
			return WorkerResult{Status: status, Error: "status " + strconv.Itoa(status) + ": " + snippet(body)}
		}
		m.pool.forget(m.w)
		return WorkerResult{Status: status}
	})
	answerFanOut(w, results, "flushed", http.StatusBadGateway, "cache flush")
}

// healthGenerate is GET /health_generate: a one-token generation on every
// worker, each holding the worker's load while it runs like any attempt.
// 200 when every worker generated, else 503 naming those that did not.
func (r *Router) healthGenerate(w http.ResponseWriter, req *http.Request) {
	body := []byte(`{"prompt":"health check","max_tokens":1,"stream":false}`)
	reqID := "health-generate-" + strings.ToLower(rand.Text())
	results := r.fanOut(req.Context(), func(ctx context.Context, m member) WorkerResult {
		g := m.pool.acquire(target{m.w, 0})
		defer g.Release()
		h := http.Header{"X-Request-Id": {reqID}}
		if len(m.w.ranks) > 1 {
			h.Set(DPRankHeader, "0")
		}
		status, out, err := r.call(ctx, http.MethodPost, m.w.url+"/v1/completions", body, h)
		if err != nil {
			return WorkerResult{Error: err.Error()}
		}
		if status != http.StatusOK {
			return WorkerResult{Status: status, Error: "status " + strconv.Itoa(status) + ": " + snippet(out)}
		}
		var c struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) == 0 {
			return WorkerResult{Status: status, Error: "answer has no choices: " + snippet(out)}
		}
		return WorkerResult{Status: status}
	})
	answerFanOut(w, results, "healthy", http.StatusServiceUnavailable, "one-token generation")
}

// snippet is the start of a worker's answer, for an error message.
func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
