package sim

import "github.com/autoinfer/autoinfer/target/kvevents"

// ObserveKVEvents makes every engine of the fleet record its prefix-cache
// events and hands each batch to fn as the engine flushes it (before any
// sequence of the step hears of its progress, as a served engine
// publishes it), stamped with the fleet's virtual time: worker w, its rank
// and the batch (naming the rank when the worker has several, as a served
// engine's does). Engines without prefix caching have no events. Call it
// before the first Submit; fn runs on the goroutine driving the fleet.
func (f *Fleet) ObserveKVEvents(fn func(w, rank int, b kvevents.Batch)) {
	for w, s := range f.servers {
		for r, e := range s.ranks {
			if !e.cfg.prefixCache {
				continue
			}
			if e.kv == nil {
				e.enableKVEvents(&kvEventLog{srv: s, rank: dpRankOf(r, len(s.ranks))})
			}
			e.kv.sink = func(b kvevents.Batch) { fn(w, r, b) }
		}
	}
}
