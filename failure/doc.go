// Package failure is the closed set of typed trial failures and the rules
// that classify what a trial observed into one of them.
//
// Every kind has a stable name (its Kind, stored in the ledger's
// failure_kind column) and typed fields that encode to JSON (the ledger's
// failure column); Decode turns the pair back into the right Go type.
//
// Classify applies the rules in a fixed precedence (see classify.go). The
// rule that matters most: a saturated pool (queue_full, queue_timeout,
// pool_exhausted, 503s while circuits are open) is RouterPoolExhausted and
// never a worker or engine failure; worker failures need evidence from the
// worker process itself (a failed start or an exit).
package failure
