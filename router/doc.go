// Package router is autoinfer's embedded LLM router: vllm-router's routes,
// policies and reliability features, with exact per-worker load accounting.
// A trial starts a fresh one per run: New(cfg) validates the Config and
// builds the pools, Serve(ctx, listener) runs it until ctx ends, Loads
// reports the exact in-flight count per worker. docs/router.md is the
// user's view (routes, defaults, metrics, error types); this is the map of
// the code.
//
// # The request path
//
// A request to an inference route (POST /v1/completions, /v1/chat/completions,
// /v1/embeddings, /generate, /v1/responses), to GET /v1/models or to an
// allowed other path (pass-through) goes through these steps, each in its
// file:
//
//  1. route (routes.go, handler.go): the mux picks the route; routed assigns
//     the request id (X-Request-Id and friends, echoed back) and counts the
//     request, its duration and its error type per route, and, once it is
//     admitted, per run (X-Run-ID; runs.go caps the live runs).
//  2. validation (handler.go, auth.go, body.go, inbound.go): the API key
//     (401), the pass-through allowlist (404), method (405), the run id
//     (400), the body — reserved against max_body_memory before a byte is
//     read, then read within body_read_timeout_secs (413, 408, 429) — and
//     for inference routes a JSON object body (400), from which the model
//     and the text cache_aware matches on are read in one linear pass
//     (router/prompt). Everything that can reject a request runs here,
//     before any worker is chosen, so a rejected request never touches a
//     load count.
//  3. limiter (limiter.go): max_concurrent_requests admitted at once, a FIFO
//     queue of queue_size behind them (full: 429 queue_full; waited
//     queue_timeout_secs: 408 queue_timeout). Then request_timeout_secs
//     starts, covering every attempt and the whole relay.
//  4. selection (dispatch.go, pool.go, policy/): Pool.pick lists the
//     candidates — every rank of every worker that is healthy and whose
//     circuit admits traffic — with their load signal, and the pool's policy
//     picks one. No candidate: 503 no_available_workers.
//  5. attempt (attempt.go): the attempt binds its load to the target with a
//     guard, sends the buffered request, and classifies the answer: a
//     transport error, 500/502, 429/503 or 408/504 is retryable (tryTargets
//     backs off and picks again, up to retry.max_retries attempts in all);
//     anything else, including a vLLM input-validation 500, goes to the
//     client. Workers are reached through router/h1, an HTTP/1.1 client
//     that does each round trip on the attempt's goroutine (https and
//     unusual requests fall back to net/http's Transport).
//  6. relay (relay.go, usage.go): headers minus hop-by-hop ones, then the
//     body chunk by chunk with a flush after each, so streams are never held
//     back, each write bounded by write_idle_timeout_secs; a tap reads the
//     usage object on the way for per-run token counts. A stream the worker breaks off, or that request_timeout_secs
//     cuts, is cut for the client too (never a clean end).
//
// When every attempt failed, answer (dispatch.go) turns the last failure into
// the client's error in the OpenAI shape (errors.go), with a stable type:
// upstream_error, upstream_timeout, pool_exhausted, no_available_workers.
//
// # Load accounting
//
// guard.go and pool.go own the in-flight counts; nothing else changes them.
// Pool.acquire increments exactly one (worker, rank) when an attempt starts
// and the attempt's single deferred guard.Release decrements it exactly
// once, whatever ends the attempt: success, error status, retry, timeout,
// client cancel, or the worker being removed mid-stream. A removed worker
// stays in the pool's draining set, still counted, until its last attempt
// releases. Health checks never touch counts. Every test's router checks at
// cleanup that all loads are back to 0 (routertest.ServeOn).
//
// # Reliability: circuits, retries, health
//
//   - breaker.go: one circuit per worker, Closed → Open after
//     failure_threshold consecutive failures, Open → HalfOpen after
//     timeout_duration_secs (on the next pick), HalfOpen → Closed after
//     success_threshold successes. recordOutcome (attempt.go) feeds it: 5xx,
//     transport errors and timeouts fail; 4xx and validation 500s do not.
//   - dispatch.go: tryTargets runs the attempts of one request (collocated,
//     and each PD leg alike), re-picking a worker each time, with
//     exponential backoff and jitter between them (backoff).
//   - health.go: every health_check.interval_secs, GET the endpoint of every
//     worker; failure_threshold misses in a row mark it unhealthy (and drop
//     it from cache_aware's tree), success_threshold passes mark it healthy.
//   - loadsignal.go: under load_signal in_flight+queue, every
//     load_check_interval_secs, scrape vllm:num_requests_waiting per worker.
//
// serve.go runs the health, eviction and load-scrape loops for the lifetime
// of Serve and shuts down gracefully: responses in flight get ShutdownGrace,
// idle and never-used client connections are closed at once.
//
// # Exposure
//
// routerconfig/security.go holds the settings that make a router safe to
// expose (keys by environment variable name, pass-through allowlist, body
// memory, run-id cap, timeouts) and the worker-URL rules; secrets.go
// resolves the keys themselves (never part of Config); auth.go checks keys per route
// (public probes, client routes, observability, admin) and strips client
// credentials before anything reaches a worker, which gets the router's own
// worker key instead. serve.go warns when the router listens beyond
// loopback without an API key.
//
// # Metrics
//
// Every router has its own Prometheus registry (several share a process),
// served at GET /metrics with vllm-router's vllm_router_ names. metrics.go
// holds the counters and histograms updated on the request path;
// collector.go computes every gauge that mirrors live state (loads, health,
// circuits, tree sizes, queue) at scrape time, so none can drift from what
// it describes; pd_metrics.go adds the vllm_router_pd_ series in PD mode.
// admin.go serves the worker list, loads, readiness and worker add/remove.
//
// # Prefill/decode disaggregation
//
// With pd_disaggregation the router has a prefill pool and a decode pool,
// each with its own policy, sharing the health checks, circuits, retries,
// guards and metrics above. pd.go (servePD, disaggregate, decodeLeg) picks
// the decode worker first (an empty decode pool fails before a prefill is
// wasted), runs the prefill leg, then streams the decode leg's answer;
// short prompts (routing_threshold) and other routes go to a decode worker
// alone. pd_prefill.go runs the prefill leg's attempts, each bounded by
// prefill_timeout_secs (504 pd_connector_timeout, or local prefill on the
// decode worker with pd_fallback_local). What goes on the wire between the
// legs — the two bodies, kv_transfer_params, the nccl request id, the token
// estimate — is the leaf package router/pd.
//
// # Sub-packages
//
//   - policy: the selection policies (random, round_robin, power_of_two,
//     consistent_hash, cache_aware, least_loaded) behind one interface.
//   - pd: PD's wire format, pure functions of bytes.
//   - prompt: the text and token estimate of prompt-like JSON values, read
//     once with a depth limit.
//   - routertest: helpers for tests that start routers and fake workers,
//     over loopback TCP or an in-memory network inside a testing/synctest
//     bubble (WithDialer), where timer-driven logic runs on a fake clock.
package router
