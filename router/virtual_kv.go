package router

import (
	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/target/kvevents"
)

// ApplyKVEvents applies one KV event batch worker published to the
// router's block index, as the worker's subscribers would on receiving it
// (one per rank the router addresses, each keeping the batches naming its
// rank): the virtual clock's delivery, which calls it at the virtual
// instant the batch arrives. Batches of one worker come in publish order
// and none is lost, so no sequence bookkeeping is needed.
func (r *Router) ApplyKVEvents(worker string, b kvevents.Batch) {
	ApplyKVBatch(r.kv.idx, worker, max(r.cfg.IntraNodeDataParallelSize, 1), b)
}

// ApplyKVBatch applies b, published by worker, to idx as a router
// addressing dp ranks of each worker keys it: the same sources, rank
// filter and index code as the router's own subscribers. A virtual
// deployment keeps its index of the engines' real caches with it.
func ApplyKVBatch(idx *policy.BlockIndex, worker string, dp int, b kvevents.Batch) {
	for rank := range dp {
		if src := kvSource(worker, rank, dp); src.Accepts(b) {
			idx.Apply(src.ID, b)
		}
	}
}

// FollowsKVEvents reports whether the router routes on its workers' KV
// events: its policy reads them and it is collocated (a trial derives no
// streams for a prefill/decode router, so it follows none in real time).
func (r *Router) FollowsKVEvents() bool { return r.cfg.FollowsKVEvents() && !r.cfg.PDDisaggregation }
