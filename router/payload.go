package router

import (
	"fmt"
	"net/http"
)

// A worker that refuses a body with 413 says nothing about its health: the
// refusal is relayed to the client and never counts against the worker's
// circuit. The router also learns the bound from it, and refuses a larger
// body itself before reading or sending it, so that no client can make
// the router carry bodies its workers will not take.

// learnRefusal records that w refused a body of n bytes with 413.
func (r *Router) learnRefusal(w *Worker, n int64) {
	if n <= 0 {
		return
	}
	for {
		cur := w.maxBody.Load()
		if cur != 0 && cur <= n-1 {
			return
		}
		if w.maxBody.CompareAndSwap(cur, max(n-1, 1)) {
			r.log.Info("worker refused a body with 413; larger bodies are refused by the router",
				"worker", w.url, "body_bytes", n)
			return
		}
	}
}

// payloadLimit is the largest body the router accepts now: max_payload_size,
// or less when a worker refused a smaller body (then worker names it).
func (r *Router) payloadLimit() (limit int64, worker string) {
	limit = r.cfg.MaxPayloadSize
	for _, p := range r.pools {
		for _, w := range p.members() {
			if n := w.maxBody.Load(); n != 0 && n < limit {
				limit, worker = n, w.url
			}
		}
	}
	return limit, worker
}

// tooLarge is the 413 for a body over limit; worker is the worker whose
// refusal lowered the limit ("" for max_payload_size itself).
func tooLarge(limit int64, worker string) *apiError {
	msg := fmt.Sprintf("request body exceeds max_payload_size (%d bytes)", limit)
	if worker != "" {
		msg = fmt.Sprintf("request body exceeds %d bytes, the most the workers accept (worker %s refused a larger one with 413)", limit, worker)
	}
	return newAPIError(http.StatusRequestEntityTooLarge, ErrTypePayloadTooLarge, msg)
}
