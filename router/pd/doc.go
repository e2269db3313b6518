// Package pd is the wire format of prefill/decode disaggregation, as the
// router speaks it to vLLM's KV connectors (docs/router.md, reference
// pd.md): how a client's completion body becomes the prefill leg's and the
// decode leg's bodies, what the router reads from the prefill engine's
// answer, the X-Request-Id the two legs share, and the prompt-size estimate
// routing_threshold compares. Everything here is a pure function of bytes,
// tested without HTTP.
//
// The orchestration — picking a worker in each pool, running the legs with
// retries, load guards and timeouts, relaying the decode stream — lives in
// the router package (pd.go, pd_prefill.go), because it is built from the
// same attempts, pools and circuits as collocated routing.
package pd
