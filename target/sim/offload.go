package sim

import (
	"container/list"
	"fmt"
	"math"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Defaults of the CPU tier's transfer model (docs/sim.md cites them).
const (
	defaultOffloadGBps    = 50 // GB/s host-to-device: PCIe Gen5 x16 at ~80 % of its 64 GB/s per direction
	defaultOffloadBlockUs = 5  // µs per block: one DMA descriptor and its bookkeeping
)

// KVOffload is an optional CPU tier for prefix-cache blocks, as vLLM's KV
// offloading connector and LMCache's local CPU backend provide: a block the
// GPU cache evicts moves to the tier (stores are asynchronous DMA and cost
// no step time), and a later prefix hit in the tier loads it back at
// BlockUs + block bytes / GBps per block, added to the step that uses it.
// The tier evicts least recently used blocks.
type KVOffload struct {
	// GiB is the tier's size (vLLM's kv_offloading_size); 0: no tier.
	GiB float64 `yaml:"kv_offload_gib,omitempty" json:"kv_offload_gib,omitempty"`
	// GBps is the CPU→GPU bandwidth in GB/s (default 50).
	GBps float64 `yaml:"kv_offload_gbps,omitempty" json:"kv_offload_gbps,omitempty"`
	// BlockUs is the fixed cost of loading one block in µs (default 5).
	BlockUs float64 `yaml:"kv_offload_block_us,omitempty" json:"kv_offload_block_us,omitempty"`
}

// Validate names each bad field by its yaml key.
func (o KVOffload) Validate() error {
	ok := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	switch {
	case !ok(o.GiB):
		return field.Errorf("kv_offload_gib", "must be >= 0 (0: no CPU tier), got %v", o.GiB)
	case !ok(o.GBps):
		return field.Errorf("kv_offload_gbps", "must be > 0 (0: default %d), got %v", defaultOffloadGBps, o.GBps)
	case !ok(o.BlockUs):
		return field.Errorf("kv_offload_block_us", "must be >= 0, got %v", o.BlockUs)
	case o.GiB == 0 && (o.GBps != 0 || o.BlockUs != 0):
		return fmt.Errorf("kv_offload_gbps, kv_offload_block_us: set without a CPU tier (kv_offload_gib is 0)")
	}
	return nil
}

// cpuTier is the resolved tier of one rank: an LRU set of block hashes.
type cpuTier struct {
	capacity  int
	loadBlock time.Duration // time to load one block back to the GPU
	lru       *list.List    // front: most recently used
	at        map[uint64]*list.Element
}

// newCPUTier sizes the tier in blocks of blockBytes; nil when o has none.
func newCPUTier(o KVOffload, blockBytes int) (*cpuTier, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.GiB == 0 {
		return nil, nil
	}
	if blockBytes <= 0 {
		return nil, field.Errorf("kv_offload_gib", "the profile has no kv_bytes_per_token to size the CPU tier by")
	}
	gbps, us := o.GBps, o.BlockUs
	if gbps == 0 {
		gbps = defaultOffloadGBps
	}
	if us == 0 {
		us = defaultOffloadBlockUs
	}
	n := int(o.GiB * (1 << 30) / float64(blockBytes))
	if n < 1 {
		return nil, field.Errorf("kv_offload_gib", "%v GiB holds no block of %d bytes", o.GiB, blockBytes)
	}
	load := time.Duration(us*float64(time.Microsecond) + float64(blockBytes)/gbps)
	return &cpuTier{capacity: n, loadBlock: load, lru: list.New(), at: make(map[uint64]*list.Element, n)}, nil
}

// store keeps h (a block the GPU evicted), dropping the least recently
// used block when full.
func (t *cpuTier) store(h uint64) {
	if el, ok := t.at[h]; ok {
		t.lru.MoveToFront(el)
		return
	}
	if t.lru.Len() == t.capacity {
		old := t.lru.Back()
		delete(t.at, old.Value.(uint64))
		t.lru.Remove(old)
	}
	t.at[h] = t.lru.PushFront(h)
}

// hits counts how many leading hashes the tier holds, at most limit.
func (t *cpuTier) hits(hashes []uint64, limit int) int {
	n := 0
	for n < len(hashes) && n < limit {
		if _, ok := t.at[hashes[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// touch marks the loaded blocks as recently used (the tier keeps its copy).
func (t *cpuTier) touch(hashes []uint64) {
	for _, h := range hashes {
		t.lru.MoveToFront(t.at[h])
	}
}

func (t *cpuTier) usage() float64 { return float64(t.lru.Len()) / float64(t.capacity) }
