package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autoinfer/autoinfer/router/h1"
)

// DPRankHeader tells a data-parallel worker which rank serves the request.
const DPRankHeader = "X-data-parallel-rank"

// attempt sends in to one target and, unless the worker's answer is
// retryable, relays it to the client. The target's load is held by a guard
// for exactly the attempt's lifetime — through the end of a streamed body —
// and released by the deferred call whatever happens. It returns nil once
// the response went to the client.
func (r *Router) attempt(ctx context.Context, w http.ResponseWriter, in *inbound, pool *Pool, t target) *attemptFailure {
	var g guard
	pool.hold(&g, t)
	defer g.Release()
	up, f := r.roundTrip(ctx, in, t)
	if f != nil {
		return f
	}
	defer up.close()

	status := up.resp.StatusCode
	src := up.body
	sse := isSSE(up.resp.Header)
	if in.patchJSON != nil && status == http.StatusOK && !sse {
		// Read one byte past the bound: a larger body is relayed unpatched
		// and whole rather than cut at the bound.
		whole, err := io.ReadAll(io.LimitReader(src, maxJSONBody+1))
		if err != nil {
			return r.transportFailure(ctx, t.w, fmt.Errorf("reading response: %w", err))
		}
		if len(whole) <= maxJSONBody {
			whole = in.patchJSON(whole)
			up.resp.Header.Set("Content-Length", strconv.Itoa(len(whole)))
			src = bytes.NewReader(whole)
		} else {
			src = io.MultiReader(bytes.NewReader(whole), src)
		}
	}
	copyResponseHeaders(w.Header(), up.resp.Header)
	// The headers, like every chunk after them, must go out within the
	// write-idle window, or a client that never reads would hold the
	// attempt (and its load) forever.
	_ = control{w}.SetWriteDeadline(time.Now().Add(secs(r.cfg.WriteIdleTimeoutSecs)))
	w.WriteHeader(status)
	if sse {
		// A stream's headers go out now, as the worker sent them, not with
		// its first event.
		_ = control{w}.Flush()
	}
	var tap *usageTap
	if in.runID != "" {
		tap = newUsageTap(up.resp.Header.Get("Content-Type"))
	}
	readErr, writeErr := relayBody(w, src, tap, sse || up.resp.ContentLength < 0, secs(r.cfg.WriteIdleTimeoutSecs))
	switch {
	case writeErr != nil:
		// The client left: not the worker's fault.
	case readErr != nil && errors.Is(context.Cause(ctx), errRequestTimeout):
		// Our deadline cut the stream while the client still listens: it
		// must see the truncation. Counted against the worker like a
		// timeout before the headers.
		r.log.Warn("request timed out mid-response", "worker", t.w.url, "request_id", in.reqID)
		r.recordOutcome(t.w, false)
		in.aborted = ErrTypeUpstreamTimeout
	case ctx.Err() != nil:
		// The client left while we were reading: not the worker's fault.
	case readErr != nil:
		r.log.Warn("worker stream broke", "worker", t.w.url, "request_id", in.reqID, "err", readErr)
		r.recordOutcome(t.w, false)
		in.aborted = errStreamBroken
	default:
		r.recordOutcome(t.w, status < 500 || up.validation)
	}
	if tap != nil {
		in.usage = tap.Usage()
	}
	return nil
}

// upstream is a worker's answer that is not retryable: a success, a 4xx, a
// validation 500, or another status to relay.
type upstream struct {
	resp       *http.Response
	body       io.Reader // the whole body (a prefix may have been read to classify a 500)
	validation bool      // a vLLM input-validation 500: the client's fault
	req        *http.Request
	out        *outbound // req's parts, given back by close
}

// close closes the answer's body, which ends the round trip, and gives the
// request's parts back.
func (u upstream) close() {
	_ = u.resp.Body.Close()
	u.out.release(u.req)
}

// roundTrip sends in's method, URI, body and headers to t with in.reqID as
// X-Request-Id. A transport error or a retryable status comes back as a
// failure (fed to the circuit); anything else as the open response, which
// the caller must close (upstream.close).
func (r *Router) roundTrip(ctx context.Context, in *inbound, t target) (upstream, *attemptFailure) {
	t.w.series.processed.get(func() prometheus.Counter { return r.m.processed.WithLabelValues(t.w.url) }).Inc()
	req, out, err := upstreamRequest(ctx, in, t.w)
	if err != nil {
		return upstream{}, &attemptFailure{kind: failUpstream, worker: t.w.url, detail: "building request: " + err.Error()}
	}
	forwardHeaders(req.Header, in.header, r.cfg.ForwardClientAuth)
	if !r.cfg.KeepUnderscoreHeaders {
		dropUnderscoreFields(req.Header)
	}
	if len(in.reqIDHeader) == 1 && in.reqIDHeader[0] == in.reqID {
		req.Header["X-Request-Id"] = in.reqIDHeader
	} else {
		req.Header.Set("X-Request-Id", in.reqID)
	}
	if len(t.w.ranks) > 1 {
		req.Header.Set(DPRankHeader, strconv.Itoa(t.rank))
	}
	resp, err := r.upstream.RoundTrip(req)
	if err != nil {
		out.release(req)
		return upstream{}, r.transportFailure(ctx, t.w, err)
	}

	status := resp.StatusCode
	if status == http.StatusRequestEntityTooLarge {
		r.learnRefusal(t.w, int64(len(in.body)))
	}
	var head []byte // the start of a 500 body, read to tell validation errors apart
	validation := false
	if status == http.StatusInternalServerError {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		validation = isValidationError(head)
	}
	if kind, retry := retryable(status); retry && !validation {
		if head == nil {
			head, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		}
		resp.Body.Close()
		out.release(req)
		if status >= 500 {
			r.recordOutcome(t.w, false)
		}
		return upstream{}, &attemptFailure{kind: kind, worker: t.w.url, detail: fmt.Sprintf("status %d: %s", status, errorMessage(head))}
	}
	body := io.Reader(resp.Body)
	if head != nil {
		body = io.MultiReader(bytes.NewReader(head), resp.Body)
	}
	return upstream{resp: resp, body: body, validation: validation, req: req, out: out}, nil
}

func isSSE(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
}

// transportFailure classifies a failed round trip.
func (r *Router) transportFailure(ctx context.Context, w *Worker, err error) *attemptFailure {
	switch {
	case errors.Is(context.Cause(ctx), errRequestTimeout):
		r.recordOutcome(w, false)
		return &attemptFailure{kind: failTimeout, worker: w.url, detail: "request timed out"}
	case ctx.Err() != nil:
		return &attemptFailure{kind: failClient, worker: w.url, detail: "client went away"}
	}
	r.recordOutcome(w, false)
	f := &attemptFailure{kind: failUpstream, worker: w.url, detail: err.Error()}
	if errors.Is(err, h1.ErrMalformedAnswer) {
		f.spoiled = w
	}
	return f
}

func (r *Router) recordOutcome(w *Worker, ok bool) {
	series, outcome := &w.series.success, "success"
	if !ok {
		series, outcome = &w.series.failure, "failure"
	}
	series.get(func() prometheus.Counter { return r.m.cbOutcomes.WithLabelValues(w.url, outcome) }).Inc()
	w.breaker.Record(ok)
}

// retryable reports whether a worker status may be retried elsewhere, and
// how to classify it if it is the last one.
func retryable(status int) (failKind, bool) {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return failSaturated, true
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return failTimeout, true
	case http.StatusInternalServerError, http.StatusBadGateway:
		return failUpstream, true
	}
	return 0, false
}

// isValidationError recognises vLLM input-validation failures reported as
// 500 (too-long prompts, bad parameters): they are the client's fault, so
// they neither trip the circuit nor get retried.
func isValidationError(body []byte) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	typ := strings.ToLower(e.Error.Type + " " + e.Type)
	msg := strings.ToLower(e.Error.Message + " " + e.Message)
	return strings.Contains(typ, "badrequest") || strings.Contains(typ, "invalid_request") ||
		strings.Contains(typ, "validation") || strings.Contains(msg, "maximum context length") ||
		strings.Contains(msg, "validation error")
}

// errorMessage extracts a short message from an error body.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
