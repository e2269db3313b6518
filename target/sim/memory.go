package sim

import (
	"fmt"
	"unsafe"
)

// What a simulated server holds, for estimating a trial's memory before it
// starts (trial run refuses a spec that would not fit the machine). The
// figures are upper bounds of the bookkeeping's heap, checked against a
// measured server in TestMemoryBytesBoundsHeap.
const (
	// serverBaseBytes is one server without its KV pool: metrics
	// registry, routes, buffers.
	serverBaseBytes = 4 << 20
	// bytesPerBlock is one KV block: its entry in the pool and, once it
	// holds cached content, its entry in the hash map (preallocated).
	bytesPerBlock = int64(unsafe.Sizeof(block{})) + 56
	// seqBaseBytes is one request's fixed state in an engine and its
	// handler (the seq, the decoded request, the response writer).
	seqBaseBytes = 8 << 10
	// seqBytesPerToken is one token of a request in an engine: its id,
	// its share of the block hashes and ids, its emission time if
	// recorded, and the request body's text (a few bytes per token).
	seqBytesPerToken = 8 + 16 + 24 + 16
)

// MemoryBytes is the most heap one server of o holds for its bookkeeping
// before any request arrives: every rank's KV pool and prefix-cache map and
// its CPU tier. Requests add SeqBytes each while they are in the engine.
func MemoryBytes(o Options) (int64, error) {
	c, err := resolve(o)
	if err != nil {
		return 0, fmt.Errorf("sim options: %w", err)
	}
	perRank := int64(c.numBlocks+1) * bytesPerBlock
	if c.offload.GiB > 0 {
		// The CPU tier keeps a list element and a map entry per block.
		blocks := int64(c.offload.GiB * (1 << 30) / float64(max(c.profile.KVBytesPerToken*c.blockSize, 1)))
		perRank += blocks * 128
	}
	return serverBaseBytes + int64(c.ranks)*perRank, nil
}

// SeqBytes is the most heap a request of tokens (prompt and output) holds
// while it is in a simulated engine.
func SeqBytes(tokens int) int64 { return seqBaseBytes + int64(tokens)*seqBytesPerToken }
