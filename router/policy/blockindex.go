package policy

import (
	"sync"

	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/mixhash"
)

// defaultBlockSize is the block size keys are cut at before any worker
// said otherwise in an event (vLLM's default).
const defaultBlockSize = 16

// chainRoot seeds the router's block keys.
const chainRoot uint64 = 0x243f6a8885a308d3

// BlockIndex is the router's copy of each worker's prefix cache, built
// from the KV events the worker publishes. Blocks are keyed by the router's
// own hash chained over token ids (the events carry them), not by the
// engine's hashes, so the router needs no engine's hash function and a
// request's blocks are keyed the same way from its tokens. Safe for
// concurrent use: subscribers apply events while policies read.
type BlockIndex struct {
	mu      sync.RWMutex
	workers map[string]*workerBlocks
	bs      int // block size of the most recent BlockStored
}

type workerBlocks struct {
	byEngine map[kvevents.BlockHash]uint64 // engine hash → router key
	keys     map[uint64]int                // router key → engine blocks holding it
	// stale: events were lost and not replayed, so this copy is no longer
	// known to match the worker's cache; policies score it approximately
	// until the worker's cache is known again (AllBlocksCleared).
	stale bool
}

// NewBlockIndex returns an empty index.
func NewBlockIndex() *BlockIndex {
	return &BlockIndex{workers: map[string]*workerBlocks{}, bs: defaultBlockSize}
}

func (x *BlockIndex) worker(id string) *workerBlocks {
	w := x.workers[id]
	if w == nil {
		w = &workerBlocks{byEngine: map[kvevents.BlockHash]uint64{}, keys: map[uint64]int{}}
		x.workers[id] = w
	}
	return w
}

// Apply applies one batch of worker id's events, in sequence order. Only
// GPU blocks count: a block in a CPU tier is not a prefix hit the worker's
// scheduler sees first.
func (x *BlockIndex) Apply(id string, b kvevents.Batch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.worker(id)
	for _, ev := range b.Events {
		switch ev := ev.(type) {
		case kvevents.BlockStored:
			if ev.Medium != "" && ev.Medium != kvevents.MediumGPU {
				continue
			}
			x.bs = ev.BlockSize
			key, known := chainRoot, true
			if ev.Parent != nil {
				key, known = w.byEngine[*ev.Parent]
			}
			for i, h := range ev.BlockHashes {
				if !known {
					// The parent left (or was never seen): the block cannot
					// be placed in a chain, so no request can match it.
					key = mixhash.Mix64(h.Int ^ mixhash.Mix64(uint64(len(h.Bytes))))
				}
				key = chainKey(key, ev.TokenIDs[i*ev.BlockSize:(i+1)*ev.BlockSize])
				if _, dup := w.byEngine[h]; !dup {
					w.byEngine[h] = key
					w.keys[key]++
				}
			}
		case kvevents.BlockRemoved:
			if ev.Medium != "" && ev.Medium != kvevents.MediumGPU {
				continue
			}
			for _, h := range ev.BlockHashes {
				if key, ok := w.byEngine[h]; ok {
					delete(w.byEngine, h)
					if w.keys[key]--; w.keys[key] <= 0 {
						delete(w.keys, key)
					}
				}
			}
		case kvevents.AllBlocksCleared:
			clear(w.byEngine)
			clear(w.keys)
			w.stale = false // the cache is known again: empty
		}
	}
}

// Lost marks worker id's copy stale: events were lost for good. The copy
// is dropped (it may hold blocks the worker evicted since); new events
// still build a fresh one, but policies score the worker approximately
// until an AllBlocksCleared says what its cache holds.
func (x *BlockIndex) Lost(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.worker(id)
	clear(w.byEngine)
	clear(w.keys)
	w.stale = true
}

// Restarted resets worker id's copy to a known-empty cache: its publisher
// started over (a new engine holds nothing).
func (x *BlockIndex) Restarted(id string) {
	x.Apply(id, kvevents.Batch{Events: []kvevents.Event{kvevents.AllBlocksCleared{}}})
}

// Stale reports whether worker id's copy is stale.
func (x *BlockIndex) Stale(id string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	w := x.workers[id]
	return w != nil && w.stale
}

// Blocks is the number of blocks worker id holds in the index.
func (x *BlockIndex) Blocks(id string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if w := x.workers[id]; w != nil {
		return len(w.byEngine)
	}
	return 0
}

// BlockSize is the block size requests are keyed at.
func (x *BlockIndex) BlockSize() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.bs
}

// Keys returns the chained keys of the full blocks of tokens.
func Keys(tokens []int, bs int) []uint64 {
	keys := make([]uint64, 0, len(tokens)/bs)
	key := chainRoot
	for i := 0; (i+1)*bs <= len(tokens); i++ {
		key = chainKey(key, tokens[i*bs:(i+1)*bs])
		keys = append(keys, key)
	}
	return keys
}

func chainKey(parent uint64, tokens []int) uint64 {
	h := parent
	for _, t := range tokens {
		h = mixhash.Mix64(h ^ uint64(t)*0x9e3779b97f4a7c15)
	}
	return h
}

// match is how many leading keys worker id holds; ok is false when its
// copy is stale.
func (x *BlockIndex) match(id string, keys []uint64) (n int, ok bool) {
	w := x.workers[id]
	if w == nil {
		return 0, true
	}
	if w.stale {
		return 0, false
	}
	for n < len(keys) {
		if _, hit := w.keys[keys[n]]; !hit {
			break
		}
		n++
	}
	return n, true
}
