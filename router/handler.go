package router

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	kindPassthrough                  // an allowed other path, forwarded as is; the policy decides
)

// routed serves a request that goes to a worker. Everything that can reject
// the request — key, path, method, run id, size, JSON — runs before any
// worker is chosen, so no rejected request ever touches a load count, and
// only admitted requests are counted per run.
func (r *Router) routed(route string, kind routeKind) http.HandlerFunc {
	var series routeSeries
	return func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		in := &inbound{route: route, method: req.Method, uri: req.URL.RequestURI(), url: req.URL, header: req.Header,
			reqID: r.ids.of(req.Header, r.reqIDHeaders), runID: firstValue(req.Header, runIDKey)}
		// One value slice for the client's answer and the worker's
		// request (roundTrip): neither is changed in place.
		in.reqIDHeader = []string{in.reqID}
		w.Header()["X-Request-Id"] = in.reqIDHeader
		series.requests.get(func() prometheus.Counter { return r.m.requests.WithLabelValues(route) }).Inc()

		errType := r.serveRouted(w, req, in, kind)
		if in.aborted != "" {
			errType = in.aborted
		}
		if errType != "" {
			r.m.errors.WithLabelValues(route, errType).Inc()
		}
		series.duration.get(func() prometheus.Observer { return r.m.duration.WithLabelValues(route) }).Observe(time.Since(start).Seconds())
		if in.admitted && in.runID != "" {
			r.runs.record(in.runID, in.usage)
		}
		if in.aborted != "" {
			panic(http.ErrAbortHandler) // net/http cuts the connection without logging
		}
	}
}

func (r *Router) serveRouted(w http.ResponseWriter, req *http.Request, in *inbound, kind routeKind) string {
	if e := r.keys.authorize(req.Header, accessClient); e != nil {
		closeUnread(w, req)
		denied(w, e)
		return e.Type
	}
	if kind == kindPassthrough && !r.pass.allows(req) {
		closeUnread(w, req)
		return reject(w, newAPIError(http.StatusNotFound, ErrTypeNotFound,
			"path not served: only the named routes and passthrough_routes reach workers"))
	}
	if kind == kindInference && req.Method != http.MethodPost {
		closeUnread(w, req)
		w.Header().Set("Allow", http.MethodPost)
		return reject(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed, req.Method+" not allowed on "+req.URL.Path+"; use POST"))
	}
	if kind == kindModels && req.Method != http.MethodGet && req.Method != http.MethodHead {
		closeUnread(w, req)
		w.Header().Set("Allow", http.MethodGet)
		return reject(w, newAPIError(http.StatusMethodNotAllowed, ErrTypeMethodNotAllowed, req.Method+" not allowed on "+req.URL.Path+"; use GET"))
	}
	if in.runID != "" && !validRunID(in.runID) {
		closeUnread(w, req)
		return reject(w, badRunID())
	}
	body, res, err := r.readBody(w, req, kind)
	if err != nil {
		return rejectErr(w, err)
	}
	defer r.releaseBody(in, &res)
	in.body = body
	pr, apiErr := r.describe(req, body, kind)
	if apiErr != nil {
		return reject(w, apiErr)
	}
	in.policy = pr

	if err := r.limiter.acquire(req.Context()); err != nil {
		return rejectErr(w, err)
	}
	defer r.limiter.release()
	in.admitted = true

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

// rejectErr answers an *apiError; any other error means the client left.
func rejectErr(w http.ResponseWriter, err error) string {
	if e, ok := errors.AsType[*apiError](err); ok {
		return reject(w, e)
	}
	return "client_gone"
}
