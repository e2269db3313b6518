// Package router is autoinfer's embedded LLM router: vllm-router's routes,
// policies and reliability features with exact per-worker load accounting.
// A trial starts a fresh one per run with New(cfg) and Serve(ctx, listener).
package router
