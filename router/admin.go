package router

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// WorkerStatus is one worker in GET /workers.
type WorkerStatus struct {
	URL       string  `json:"url"`
	Pool      string  `json:"pool"`
	Healthy   bool    `json:"healthy"`
	Circuit   string  `json:"circuit"`
	Load      int64   `json:"load"`       // exact in-flight attempts
	RankLoads []int64 `json:"rank_loads"` // per data-parallel rank
	Queue     int64   `json:"queue"`      // scraped num_requests_waiting (in_flight+queue only)
}

// WorkersResponse is GET /workers. In PD mode Policy is empty and the two
// pools' policies are named instead.
type WorkersResponse struct {
	Policy        string         `json:"policy,omitempty"`
	PrefillPolicy string         `json:"prefill_policy,omitempty"`
	DecodePolicy  string         `json:"decode_policy,omitempty"`
	LoadSignal    string         `json:"load_signal"`
	Workers       []WorkerStatus `json:"workers"`
}

// Workers reports every worker's state.
func (r *Router) Workers() WorkersResponse {
	out := WorkersResponse{Policy: r.pool.policy.Name(), LoadSignal: r.cfg.LoadSignal, Workers: []WorkerStatus{}}
	if r.pd != nil {
		out.Policy, out.PrefillPolicy, out.DecodePolicy = "", r.pd.prefill.policy.Name(), r.pd.decode.policy.Name()
	}
	for _, p := range r.pools {
		for _, w := range p.Workers() {
			st := WorkerStatus{URL: w.url, Pool: p.name, Healthy: w.Healthy(), Circuit: w.breaker.State().String(),
				Load: w.Load(), Queue: w.queue.Load()}
			for i := range w.ranks {
				st.RankLoads = append(st.RankLoads, w.ranks[i].Load())
			}
			out.Workers = append(out.Workers, st)
		}
	}
	return out
}

func (r *Router) listWorkers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, r.Workers())
}

func (r *Router) getLoads(w http.ResponseWriter, _ *http.Request) {
	type load struct {
		Worker string `json:"worker"`
		Load   int64  `json:"load"`
	}
	loads := r.Loads()
	out := struct {
		Workers []load `json:"workers"`
	}{Workers: []load{}}
	for _, u := range sortedKeys(loads) {
		out.Workers = append(out.Workers, load{u, loads[u]})
	}
	writeJSON(w, http.StatusOK, out)
}

// addWorker takes the URL from a JSON body {"url": …} or from ?url=.
func (r *Router) addWorker(w http.ResponseWriter, req *http.Request) {
	u := req.URL.Query().Get("url")
	if u == "" {
		var body struct {
			URL string `json:"url"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<16)).Decode(&body); err != nil {
			writeError(w, newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, `body must be {"url": "http://host:port"}: `+err.Error()))
			return
		}
		u = body.URL
	}
	u = strings.TrimRight(u, "/")
	if err := routerconfig.CheckWorkerURL(u); err != nil {
		e := newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, "worker url: "+err.Error())
		e.Param = "url"
		writeError(w, e)
		return
	}
	wk, added := r.pool.Add(u)
	status := http.StatusOK
	if added {
		status = http.StatusCreated
		r.log.Info("worker added", "worker", u)
		if r.pool.probing.Load() {
			// Probed once before the answer, as vllm-router waits for a
			// worker it adds: one that answers serves the next request.
			r.probe(req.Context(), r.pool, wk)
		}
	}
	writeJSON(w, status, map[string]any{"url": u, "added": added, "healthy": wk.Healthy()})
}

// removeWorker takes the URL from the path (DELETE /workers/{url}, escaped
// or not) or from ?url=.
func (r *Router) removeWorker(w http.ResponseWriter, req *http.Request) {
	u := workerURLParam(req)
	if !r.pool.Remove(u) {
		writeError(w, newAPIError(http.StatusNotFound, ErrTypeNotFound, "no worker "+quoteRedacted(u)))
		return
	}
	r.log.Info("worker removed", "worker", u)
	writeJSON(w, http.StatusOK, map[string]any{"url": u, "removed": true})
}

// workerURLParam is the worker URL of a /workers/{url} path (escaped or
// not) or of ?url=.
func workerURLParam(req *http.Request) string {
	u := req.PathValue("url")
	if u == "" {
		u = req.URL.Query().Get("url")
	}
	if unesc, err := url.PathUnescape(u); err == nil {
		u = unesc
	}
	// A client that cleans paths itself sends "http://h:p" as "http:/h:p".
	for _, scheme := range []string{"http:/", "https:/"} {
		if rest, ok := strings.CutPrefix(u, scheme); ok && !strings.HasPrefix(rest, "/") {
			u = scheme + "/" + rest
		}
	}
	return strings.TrimRight(u, "/")
}

// quoteRedacted quotes a worker URL for an error message, without its user
// info.
func quoteRedacted(u string) string { return fmt.Sprintf("%q", routerconfig.RedactURL(u)) }

func (r *Router) liveness(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
}

// readiness is 200 with the healthy-worker count, or 503 when no worker can
// take traffic.
func (r *Router) readiness(w http.ResponseWriter, _ *http.Request) {
	total, healthy := 0, 0
	for _, p := range r.pools {
		for _, wk := range p.Workers() {
			total++
			if wk.Healthy() && wk.breaker.State() != BreakerOpen {
				healthy++
			}
		}
	}
	status, state := http.StatusOK, "ready"
	if healthy == 0 {
		status, state = http.StatusServiceUnavailable, "no healthy workers"
	}
	writeJSON(w, status, map[string]any{"status": state, "healthy_workers": healthy, "total_workers": total})
}

func sortedKeys(m map[string]int64) []string {
	return slices.Sorted(maps.Keys(m))
}
