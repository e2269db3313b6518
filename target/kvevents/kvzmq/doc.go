// Package kvzmq carries KV event batches (package kvevents) over ZMQ as
// vLLM does: a PUB socket sending [topic, 8-byte big-endian sequence
// number, payload] and a ROUTER socket replaying buffered batches from a
// sequence number, ended by sequence -1. The simulator publishes with it
// and the router's subscriber replays with it.
package kvzmq
