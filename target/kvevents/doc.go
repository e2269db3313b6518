// Package kvevents is vLLM's KV cache event protocol: the batches an engine
// started with --kv-events-config publishes when blocks enter or leave its
// prefix cache, their msgpack wire form, and the engine argument's JSON.
// The simulator publishes them and the router's precise_prefix policy
// reads them, so both sides share one definition of the format
// (docs/router.md, "KV events"). The ZMQ transport is in kvzmq, so code
// that only reads events (policies, configuration) does not link ZMQ.
package kvevents
