package router

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// parityRoutes adds the vllm-router routes beyond the inference, probe and
// worker-set ones (docs/router.md, "vllm-router parity"): fan-outs to every
// worker, server and model information, and the legacy URL list.
func (r *Router) parityRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/flush_cache", r.guarded(accessAdmin, only(http.MethodPost, r.flushCache)))
	mux.HandleFunc("/engine_metrics", r.guarded(accessObserve, only(http.MethodGet, r.engineMetrics)))
	mux.HandleFunc("/health_generate", r.guarded(accessClient, only(http.MethodGet, r.healthGenerate)))
	mux.HandleFunc("/get_server_info", r.guarded(accessObserve, only(http.MethodGet, r.getServerInfo)))
	mux.HandleFunc("/get_model_info", r.guarded(accessClient, only(http.MethodGet, r.getModelInfo)))
	mux.HandleFunc("/list_workers", r.guarded(accessObserve, only(http.MethodGet, r.listWorkerURLs)))
}

// only answers 405 in the OpenAI error shape to any method but m (and HEAD
// for GET).
func only(m string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if req.Method != m && (m != http.MethodGet || req.Method != http.MethodHead) {
			closeUnread(w, req)
			w.Header().Set("Allow", m)
			writeError(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed,
				req.Method+" not allowed on "+req.URL.Path+"; use "+m))
			return
		}
		h(w, req)
	}
}

// workerPaths serves GET and DELETE /workers/{url} before the mux sees the
// path: the mux would clean the "//" of a raw "http://h:p" and answer a
// redirect. An escaped URL arrives decoded in URL.Path, so both spellings
// reach the handlers as the same worker URL.
func (r *Router) workerPaths(mux http.Handler) http.Handler {
	get := r.guarded(accessObserve, r.getWorker)
	del := r.guarded(accessAdmin, r.removeWorker)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rest, ok := strings.CutPrefix(req.URL.Path, "/workers/")
		if !ok || rest == "" {
			mux.ServeHTTP(w, req)
			return
		}
		req.SetPathValue("url", rest)
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			get(w, req)
		case http.MethodDelete:
			del(w, req)
		default:
			closeUnread(w, req)
			w.Header().Set("Allow", "GET, DELETE")
			writeError(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed,
				req.Method+" not allowed on /workers/{url}; use GET or DELETE"))
		}
	})
}

// getWorker is GET /workers/{url}: one worker's state from any pool.
func (r *Router) getWorker(w http.ResponseWriter, req *http.Request) {
	u := workerURLParam(req)
	for _, st := range r.Workers().Workers {
		if st.URL == u {
			writeJSON(w, http.StatusOK, st)
			return
		}
	}
	e := newAPIError(http.StatusNotFound, ErrTypeNotFound, "no worker "+quoteRedacted(u))
	e.Param = "url"
	writeError(w, e)
}

// listWorkerURLs is vllm-router's legacy GET /list_workers: every worker
// URL of every pool.
func (r *Router) listWorkerURLs(w http.ResponseWriter, _ *http.Request) {
	urls := []string{}
	for _, p := range r.pools {
		for _, wk := range p.Workers() {
			urls = append(urls, wk.url)
		}
	}
	writeJSON(w, http.StatusOK, map[string][]string{"urls": urls})
}

// ServerInfo is GET /get_server_info: what this router runs. vllm-router
// relays a worker's SGLang-only /get_server_info; vLLM has none, so the
// router answers for itself.
type ServerInfo struct {
	Router  string        `json:"router"` // "autoinfer"
	Mode    string        `json:"mode"`   // "regular" or "vllm_pd"
	Workers []PoolSummary `json:"workers"`
	Config  Config        `json:"config"` // the resolved configuration (names of key variables, never keys)
}

// PoolSummary counts one pool's workers.
type PoolSummary struct {
	Pool         string `json:"pool"`
	Policy       string `json:"policy"`
	Total        int    `json:"total"`
	Healthy      int    `json:"healthy"`
	OpenCircuits int    `json:"open_circuits"`
}

func (r *Router) getServerInfo(w http.ResponseWriter, _ *http.Request) {
	info := ServerInfo{Router: "autoinfer", Mode: "regular", Workers: []PoolSummary{}, Config: r.cfg}
	if r.pd != nil {
		info.Mode = "vllm_pd"
	}
	for _, p := range r.servingPools() {
		size, healthy, open := p.availability()
		info.Workers = append(info.Workers, PoolSummary{Pool: p.name, Policy: p.policy.Name(), Total: size, Healthy: healthy, OpenCircuits: open})
	}
	writeJSON(w, http.StatusOK, info)
}

// servingPools are the pools that take traffic: the collocated one, or the
// prefill and decode pools in PD mode (the collocated pool is then unused).
func (r *Router) servingPools() []*Pool {
	if r.pd != nil {
		return []*Pool{r.pd.prefill, r.pd.decode}
	}
	return []*Pool{r.pool}
}

// MetricsHandler serves GET /metrics alone, under the same access rule as
// on the main listener, for a separate metrics listener like vllm-router's
// --prometheus-host/--prometheus-port. Any other path is 404.
func (r *Router) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", r.guarded(accessObserve, only(http.MethodGet, promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}).ServeHTTP)))
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeError(w, newAPIError(http.StatusNotFound, ErrTypeNotFound, "the metrics listener serves only GET /metrics"))
	})
	return mux
}
