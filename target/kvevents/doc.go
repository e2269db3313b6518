// Package kvevents is vLLM's KV cache event protocol: the batches an engine
// started with --kv-events-config publishes when blocks enter or leave its
// prefix cache, their msgpack wire form, the ZMQ framing ([topic, 8-byte
// big-endian sequence number, payload] on a PUB socket, with an optional
// ROUTER socket replaying buffered batches from a sequence number), and the
// engine argument's JSON. The simulator publishes with it and the router's
// precise_prefix policy reads what it publishes, so both sides share one
// definition of the format (docs/router.md, "KV events").
package kvevents
