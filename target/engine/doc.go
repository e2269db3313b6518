// Package engine holds the engine configuration shared by every target: the
// simulated engine applies it directly, the process target renders it as
// vLLM command-line flags, and the ledger stores it (with its hash) on every
// row so two rows can be compared on what actually ran.
package engine
