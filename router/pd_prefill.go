package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/router/pd"
)

// errPrefillTimeout is the cause of a prefill attempt's context when
// prefill_timeout_secs passed.
var errPrefillTimeout = errors.New("prefill_timeout_secs exceeded")

// prefillResult is how the prefill leg ended.
type prefillResult struct {
	tries
	answer   pd.Answer // ok: what P returned
	reqID    string    // the X-Request-Id of the last attempt, for the decode leg
	timedOut bool      // the last attempt passed prefill_timeout_secs
	answered *relayed  // P's own non-retryable error answer, for the client
}

// relayed is a complete upstream answer held for the client.
type relayed struct {
	status int
	header http.Header
	body   []byte
}

// prefillLeg sends pd.md's prefill body to prefill workers, retrying failed
// or unreachable ones on others (each pick by the prefill policy; open
// circuits and unhealthy workers are never candidates) within the retry
// budget. d is the decode worker already chosen (named in nccl ids).
func (r *Router) prefillLeg(ctx context.Context, in *inbound, body pd.Body, d target) prefillResult {
	dis := r.pd
	start := time.Now()
	leg := *in
	leg.body, leg.patchJSON = body.Prefill(), nil
	nonce := pd.NewNonce()
	var res prefillResult
	res.tries = r.tryTargets(ctx, &leg, dis.prefill, nil, nil, func(ctx context.Context, p target) *attemptFailure {
		leg.reqID = pd.RequestID(dis.connector, in.reqID, nonce, p.w.url, d.w.url)
		res.reqID, res.timedOut = leg.reqID, false
		f := r.prefillAttempt(ctx, &leg, p, &res)
		if f != nil && f.kind != failClient {
			dis.m.prefillErrors.WithLabelValues(p.w.url).Inc()
		}
		return f
	})
	if res.answered != nil {
		res.ok = false
	}
	if res.ok {
		dis.m.prefillSeconds.Observe(time.Since(start).Seconds())
	}
	return res
}

// prefillAttempt runs one prefill on p, holding p's load for exactly the
// attempt, bounded by the prefill timeout. It returns nil when P answered:
// res.answer on success, res.answered for a non-retryable error answer.
func (r *Router) prefillAttempt(ctx context.Context, leg *inbound, p target, res *prefillResult) *attemptFailure {
	dis := r.pd
	g := dis.prefill.acquire(p)
	defer g.Release()
	dis.m.prefillReqs.WithLabelValues(p.w.url).Inc()
	pctx, cancel := context.WithTimeoutCause(ctx, dis.prefillTimeout, errPrefillTimeout)
	defer cancel()

	timedOut := func() *attemptFailure {
		if !errors.Is(context.Cause(pctx), errPrefillTimeout) || ctx.Err() != nil {
			return nil
		}
		r.recordOutcome(p.w, false)
		res.timedOut = true
		return &attemptFailure{kind: failTimeout, worker: p.w.url, detail: fmt.Sprintf("no prefill answer within %s", dis.prefillTimeout)}
	}
	up, f := r.roundTrip(pctx, leg, p)
	if f != nil {
		if tf := timedOut(); tf != nil {
			return tf
		}
		return f
	}
	defer up.close()
	raw, err := io.ReadAll(io.LimitReader(up.body, maxJSONBody))
	if err != nil {
		if tf := timedOut(); tf != nil {
			return tf
		}
		return r.transportFailure(ctx, p.w, fmt.Errorf("reading prefill answer: %w", err))
	}
	status := up.resp.StatusCode
	if status != http.StatusOK {
		r.recordOutcome(p.w, status < 500 || up.validation)
		res.answered = &relayed{status: status, header: up.resp.Header, body: raw}
		return nil
	}
	if err := json.Unmarshal(raw, &res.answer); err != nil {
		r.recordOutcome(p.w, false)
		return &attemptFailure{kind: failUpstream, worker: p.w.url, detail: "prefill answer is not JSON: " + err.Error()}
	}
	r.recordOutcome(p.w, true)
	return nil
}
