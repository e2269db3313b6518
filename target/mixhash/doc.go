// Package mixhash holds the one 64-bit hash finaliser the project uses
// wherever it needs a cheap, well-spread hash of a key: the simulated
// engine's deterministic sampler and prefix-block chain, and the router's
// consistent-hash ring. Keeping one copy means a change to the mix cannot
// leave two components disagreeing about what "the same key" hashes to.
package mixhash
