// Package kvsub subscribes the router to workers' KV cache events (vLLM's
// --kv-events-config ZMQ stream, target/kvevents) and feeds them, in
// sequence order, to the block index precise_prefix routes on. A sequence
// gap (a lost message) is repaired from the worker's replay socket when it
// has one; otherwise the worker's copy is marked stale and precise_prefix
// scores it approximately. Both outcomes are counted.
package kvsub
