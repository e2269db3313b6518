package router

import "github.com/autoinfer/autoinfer/router/policy"

// Receipt is a routed request's route receipt (policy.Receipt): the chosen
// worker and every candidate's scores and predicted prefix-cache hit.
type Receipt = policy.Receipt

// ReceiptRecord is one receipt as the HTTP router reports it: the request
// it belongs to, by run id (X-Run-ID) and request id (the request's id
// header, or the one the router made up).
type ReceiptRecord struct {
	RunID     string
	RequestID string
	Receipt   *Receipt
}

// receipts is the router's receipt configuration: off unless a caller
// asked (WithReceipts, Receipts), so a served router pays nothing for it.
type receipts struct {
	on bool
	// fn hears every served request's receipt (HTTP path); nil: none.
	fn func(ReceiptRecord)
}

// WithReceipts makes the router build a route receipt for every inference
// request and report it to fn once the request's serving worker is chosen
// (a retry reports the receipt of the worker it tries next, so the last one
// reported for a request id is the worker that served it).
func WithReceipts(fn func(ReceiptRecord)) Option {
	return func(o *options) { o.receipts = fn }
}

// Receipts turns receipts on for a router that routes without HTTP (Route,
// RoutePrompt): every Routed carries its receipt. The engines' held tokens
// are the caller's to give (Prompt.Held: the virtual clock's engines count
// them themselves). Call it before the first Route.
func (r *Router) Receipts() {
	r.rcpt.on = true
}

// noteReceipt reports the receipt of in's serving decision (HTTP path).
func (r *Router) noteReceipt(in *inbound, rc *Receipt) {
	if r.rcpt.fn != nil && rc != nil {
		r.rcpt.fn(ReceiptRecord{RunID: in.runID, RequestID: in.reqID, Receipt: rc})
	}
}
