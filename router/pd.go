package router

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/router/pd"
)

// DefaultPrefillTimeoutSecs bounds one prefill attempt when
// prefill_timeout_secs is 0 (unset).
const DefaultPrefillTimeoutSecs = 60

// pdRouter is the prefill/decode mode of a router: two pools with their own
// policies, sharing the router's health checks, circuits, retries, load
// guards and metrics.
type pdRouter struct {
	prefill, decode *Pool
	connector       string
	threshold       int
	prefillTimeout  time.Duration
	fallbackLocal   bool
	m               *pdMetrics
}

// pdRoutes are the routes served as two legs; every other route goes to a
// decode worker as a collocated request (the decode engine prefills).
var pdRoutes = map[string]bool{"/v1/completions": true, "/v1/chat/completions": true}

// newPD builds the prefill and decode pools from cfg.
func (r *Router) newPD() (*pdRouter, error) {
	pp, err := r.NewPolicy(r.cfg.PrefillPolicy)
	if err != nil {
		return nil, err
	}
	dp, err := r.NewPolicy(r.cfg.DecodePolicy)
	if err != nil {
		return nil, err
	}
	m, err := newPDMetrics(r.reg)
	if err != nil {
		return nil, fmt.Errorf("registering PD metrics: %w", err)
	}
	dis := &pdRouter{
		prefill:        r.AddPool("prefill", pp),
		decode:         r.AddPool("decode", dp),
		connector:      r.cfg.KVConnector,
		threshold:      r.cfg.RoutingThreshold,
		prefillTimeout: secs(r.cfg.PrefillTimeoutSecs),
		fallbackLocal:  r.cfg.PDFallbackLocal,
		m:              m,
	}
	if dis.prefillTimeout <= 0 {
		dis.prefillTimeout = DefaultPrefillTimeoutSecs * time.Second
	}
	for _, u := range r.cfg.PrefillURLs {
		dis.prefill.Add(u)
	}
	for _, u := range r.cfg.DecodeURLs {
		dis.decode.Add(u)
	}
	return dis, nil
}

// PrefillPool returns the prefill workers (nil outside PD mode).
func (r *Router) PrefillPool() *Pool {
	if r.pd == nil {
		return nil
	}
	return r.pd.prefill
}

// DecodePool returns the decode workers (nil outside PD mode).
func (r *Router) DecodePool() *Pool {
	if r.pd == nil {
		return nil
	}
	return r.pd.decode
}

// servePD serves a request in PD mode: completions and chat as two legs,
// anything else on a decode worker as is.
func (r *Router) servePD(ctx context.Context, w http.ResponseWriter, in *inbound, kind routeKind) string {
	if kind != kindInference || !pdRoutes[in.route] {
		var pol = r.anyWorker // GET /v1/models must not advance the decode policy
		if kind != kindModels {
			pol = nil
		}
		return r.dispatch(ctx, w, in, r.pd.decode, pol)
	}
	start := time.Now()
	r.pd.m.requests.WithLabelValues(in.route).Inc()
	errType := r.disaggregate(ctx, w, in)
	if errType != "" {
		r.pd.m.errors.WithLabelValues(errType).Inc()
	}
	r.pd.m.duration.WithLabelValues(in.route).Observe(time.Since(start).Seconds())
	return errType
}

// disaggregate runs pd.md's flow: pick both workers, prefill on P with one
// request id, copy P's kv_transfer_params into the decode leg, stream D's
// answer. Short prompts (under routing_threshold) skip the prefill hop.
func (r *Router) disaggregate(ctx context.Context, w http.ResponseWriter, in *inbound) string {
	dis := r.pd
	s, ok, apiErr := dis.start(r, in.body, in.policy)
	r.noteReceipt(in, s.receipt)
	switch {
	case apiErr != nil:
		return reject(w, apiErr)
	case s.local:
		return r.decodeLeg(ctx, w, in, nil, in.body, in.reqID, nil)
	case !ok:
		return r.answer(ctx, w, dis.decode, tries{})
	}
	d, body := s.decode, s.body

	res := r.prefillLeg(ctx, in, body, d)
	first := &d
	if !d.w.Healthy() || !d.w.breaker.Allow() {
		first = nil // D went away during the prefill: the decode policy picks again
	}
	switch {
	case res.answered != nil:
		// P refused the request itself (a 4xx, a validation error): the
		// client gets P's answer, as it would from a collocated worker.
		copyResponseHeaders(w.Header(), res.answered.header)
		w.WriteHeader(res.answered.status)
		_, _ = relayBody(w, bytes.NewReader(res.answered.body), nil, true, secs(r.cfg.WriteIdleTimeoutSecs))
		return ""
	case !res.ok && ctx.Err() != nil:
		return r.answer(ctx, w, dis.prefill, res.tries)
	case !res.ok && dis.fallbackLocal:
		dis.m.localPrefill.WithLabelValues(localPrefillFailed).Inc()
		r.log.Warn("prefill failed, decode worker prefills locally", "request_id", in.reqID, "attempts", res.n)
		return r.decodeLeg(ctx, w, in, first, in.body, in.reqID, nil)
	case !res.ok && res.timedOut:
		timeout := dis.prefillTimeout.Seconds()
		e := newAPIError(http.StatusGatewayTimeout, ErrTypePDConnectorTimeout,
			fmt.Sprintf("prefill leg passed prefill_timeout_secs (%gs) on %s (request id %s, %d attempt(s))", timeout, res.last.worker, res.reqID, res.n))
		e.Leg, e.TimeoutSecs, e.RequestID = "prefill", &timeout, res.reqID
		return reject(w, e)
	case !res.ok:
		return r.answer(ctx, w, dis.prefill, res.tries)
	}

	kv := res.answer.KV()
	decodeBody := in.body
	if kv != nil {
		decodeBody = body.Decode(kv)
	} else {
		dis.m.localPrefill.WithLabelValues(localNoKVParams).Inc()
	}
	var patch func([]byte) []byte
	if c := res.answer.CachedTokens(); c != nil && !body.Streamed() {
		patch = pd.WithCachedTokens(*c)
	}
	return r.decodeLeg(ctx, w, in, first, decodeBody, res.reqID, patch)
}

// local reports (and counts) a prompt under routing_threshold: it skips
// the prefill hop and goes to a decode worker, which prefills it. The HTTP
// path and the virtual-time path both decide here.
func (dis *pdRouter) local(body pd.Body) bool {
	return dis.below(body.EstimateTokens())
}

// below reports (and counts) a prompt of estimate tokens (EstimateTokens'
// measure) under routing_threshold.
func (dis *pdRouter) below(estimate int) bool {
	if dis.threshold > 0 && estimate < dis.threshold {
		dis.m.localPrefill.WithLabelValues(localBelowThreshold).Inc()
		return true
	}
	return false
}

// decodeLeg sends body to the decode pool (first: the worker picked up
// front, if any) and relays the answer as it arrives. A failure before the
// first byte is retried on another decode worker. The decode worker's load
// is held until its stream ends.
func (r *Router) decodeLeg(ctx context.Context, w http.ResponseWriter, in *inbound, first *target, body []byte, reqID string, patch func([]byte) []byte) string {
	dis := r.pd
	leg := *in
	leg.body, leg.reqID, leg.patchJSON = body, reqID, patch
	o := r.tryTargets(ctx, &leg, dis.decode, nil, first, func(ctx context.Context, t target) *attemptFailure {
		dis.m.decodeReqs.WithLabelValues(t.w.url).Inc()
		leg.aborted = ""
		f := r.attempt(ctx, w, &leg, dis.decode, t)
		switch {
		case f != nil && f.kind != failClient:
			dis.m.decodeErrors.WithLabelValues(t.w.url).Inc()
		case leg.aborted == errStreamBroken:
			dis.m.streamErrors.WithLabelValues(t.w.url).Inc()
		}
		return f
	})
	in.usage, in.aborted = leg.usage, leg.aborted
	return r.answer(ctx, w, dis.decode, o)
}
