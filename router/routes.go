package router

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Inference routes: POST with a JSON body, chosen for by the policy.
var inferenceRoutes = []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/generate", "/v1/responses"}

func (r *Router) routes() http.Handler {
	mux := http.NewServeMux()
	for _, p := range inferenceRoutes {
		mux.Handle(p, r.routed(p, kindInference))
	}
	mux.Handle("/v1/models", r.routed(routeModels, kindModels))

	mux.HandleFunc("GET /liveness", r.liveness)
	mux.HandleFunc("GET /readiness", r.readiness)
	mux.HandleFunc("GET /health", r.readiness)
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}))

	mux.HandleFunc("GET /workers", r.listWorkers)
	mux.HandleFunc("POST /workers", r.addWorker)
	mux.HandleFunc("DELETE /workers/{url...}", r.removeWorker)
	mux.HandleFunc("GET /get_loads", r.getLoads)
	// vllm-router's legacy admin routes.
	mux.HandleFunc("GET /list_workers", r.listWorkers)
	mux.HandleFunc("POST /add_worker", r.addWorker)
	mux.HandleFunc("POST /remove_worker", r.removeWorker)

	mux.Handle("/", r.routed(routePassthrough, kindPassthrough))
	return r.track(mux)
}

// track counts running handlers so Serve can wait for them on shutdown.
func (r *Router) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.active.Add(1)
		defer r.active.Done()
		h.ServeHTTP(w, req)
	})
}
