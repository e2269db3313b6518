package router

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Inference routes: POST with a JSON body, chosen for by the policy.
var inferenceRoutes = []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/generate", "/v1/responses"}

func (r *Router) routes() http.Handler {
	mux := http.NewServeMux()
	// The routed paths are exact patterns for every method: a request for
	// one of them is looked up in a map, before ServeMux's general
	// matching (which allocates and costs a few percent of the router's
	// CPU per request); it reaches the same handler either way.
	exact := map[string]http.Handler{}
	for _, p := range inferenceRoutes {
		exact[p] = r.routed(p, kindInference)
		mux.Handle(p, exact[p])
	}
	exact["/v1/models"] = r.routed(routeModels, kindModels)
	mux.Handle("/v1/models", exact["/v1/models"])

	// Public: probes must work without a key.
	mux.HandleFunc("GET /liveness", r.liveness)
	mux.HandleFunc("GET /readiness", r.readiness)
	mux.HandleFunc("GET /health", r.readiness)

	// Observability: state, no changes; the API or admin key when one is set.
	mux.HandleFunc("GET /metrics", r.guarded(accessObserve, promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("GET /workers", r.guarded(accessObserve, r.listWorkers))
	mux.HandleFunc("GET /get_loads", r.guarded(accessObserve, r.getLoads))

	// Admin: changes the worker set; disabled without an admin key.
	// GET and DELETE /workers/{url} are served by workerPaths.
	mux.HandleFunc("POST /workers", r.guarded(accessAdmin, r.addWorker))
	mux.HandleFunc("POST /add_worker", r.guarded(accessAdmin, r.addWorker)) // vllm-router's legacy admin routes
	mux.HandleFunc("POST /remove_worker", r.guarded(accessAdmin, r.removeWorker))
	r.parityRoutes(mux)

	mux.Handle("/", r.routed(routePassthrough, kindPassthrough))
	return r.track(exactPaths(exact, r.workerPaths(mux)))
}

// exactPaths serves a request whose path is a key of exact with its
// handler and any other with next.
func exactPaths(exact map[string]http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h, ok := exact[req.URL.Path]; ok {
			h.ServeHTTP(w, req)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// track counts running handlers so Serve can wait for them on shutdown. It
// also resets the connection's deadlines for this request: a write deadline
// left by the previous response on a keep-alive connection must not cut
// this one, and a small body (admin JSON) gets body_read_timeout_secs
// (routed requests set their own when their body is admitted).
func (r *Router) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.active.Add(1)
		defer r.active.Done()
		rc := control{w}
		_ = rc.SetWriteDeadline(time.Time{})
		_ = rc.SetReadDeadline(time.Now().Add(secs(r.cfg.BodyReadTimeoutSecs)))
		h.ServeHTTP(w, req)
	})
}
