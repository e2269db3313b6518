package simtarget

import (
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/sim"
)

var _ target.InProcessWorkers = (*Options)(nil)

// WorkerMemory is the simulated engines' bookkeeping (KV pools and prefix
// caches of every rank) for topo's workers, all in this process.
func (o *Options) WorkerMemory(topo target.Topology) (int64, error) {
	p, err := o.Resolve(topo.Engine)
	if err != nil {
		return 0, err
	}
	one, err := sim.MemoryBytes(sim.Options{Engine: topo.Engine, Profile: p})
	if err != nil {
		return 0, err
	}
	return one * int64(topo.Replicas+topo.Prefill+topo.Decode), nil
}

// RequestMemory is what one request holds inside a simulated engine.
func (o *Options) RequestMemory(tokens int) int64 { return sim.SeqBytes(tokens) }
