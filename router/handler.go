package router

import (
	"context"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/router/policy"
)

// Route labels for the routes that reach workers.
const (
	routePassthrough = "passthrough"
	routeModels      = "/v1/models"
)

// routeKind says how a routed request is validated and chosen for.
type routeKind int

const (
	kindInference   routeKind = iota // POST with a JSON object body; the policy decides
	kindModels                       // GET /v1/models from any available worker
	kindPassthrough                  // anything else, forwarded as is; the policy decides
)

// routed serves a request that goes to a worker. Everything that can reject
// the request — method, size, JSON — runs before any worker is chosen, so
// no rejected request ever touches a load count.
func (r *Router) routed(route string, kind routeKind) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		in := &inbound{route: route, method: req.Method, uri: req.URL.RequestURI(), header: req.Header,
			reqID: requestID(req.Header), runID: req.Header.Get(RunIDHeader)}
		w.Header().Set("X-Request-Id", in.reqID)
		r.m.requests.WithLabelValues(route).Inc()

		errType := r.serveRouted(w, req, in, kind)
		if in.aborted != "" {
			errType = in.aborted
		}
		if errType != "" {
			r.m.errors.WithLabelValues(route, errType).Inc()
		}
		r.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		if in.runID != "" {
			r.m.runRequests.WithLabelValues(in.runID).Inc()
			if in.usage != nil {
				r.m.runPrompt.WithLabelValues(in.runID).Add(float64(in.usage.PromptTokens))
				r.m.runCompletion.WithLabelValues(in.runID).Add(float64(in.usage.CompletionTokens))
			}
		}
		if in.aborted != "" {
			panic(http.ErrAbortHandler) // net/http cuts the connection without logging
		}
	}
}

func (r *Router) serveRouted(w http.ResponseWriter, req *http.Request, in *inbound, kind routeKind) string {
	if kind == kindInference && req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return reject(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed, req.Method+" not allowed on "+req.URL.Path+"; use POST"))
	}
	if kind == kindModels && req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		return reject(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed, req.Method+" not allowed on "+req.URL.Path+"; use GET"))
	}
	body, apiErr := readBody(w, req, r.cfg.MaxPayloadSize)
	if apiErr != nil {
		return reject(w, apiErr)
	}
	in.body = body
	if in.policy, apiErr = r.describe(req, body, kind); apiErr != nil {
		return reject(w, apiErr)
	}

	release, err := r.limiter.acquire(req.Context())
	if err != nil {
		if e, ok := err.(*apiError); ok {
			return reject(w, e)
		}
		return "client_gone"
	}
	defer release()

	ctx, cancel := context.WithTimeoutCause(req.Context(), secs(r.cfg.RequestTimeoutSecs), errRequestTimeout)
	defer cancel()
	if r.pd != nil {
		return r.servePD(ctx, w, in, kind)
	}
	var pol policy.Policy // the pool's own
	if kind == kindModels {
		pol = r.anyWorker // listing models must not advance the routing policy's state
	}
	return r.dispatch(ctx, w, in, r.pool, pol)
}

func reject(w http.ResponseWriter, e *apiError) string {
	writeError(w, e)
	return e.Type
}
