package router

import "sync/atomic"

// guard is the load held by one attempt on one target. Pool.acquire (or
// Pool.hold) increments the target's in-flight count; Release decrements it exactly
// once however often it is called, so the attempt's single
// `defer g.Release()` covers every ending — success, error status, retry, timeout, client cancel, a
// worker removed mid-stream — and no code path adjusts counts by hand.
type guard struct {
	pool     *Pool
	t        target
	released atomic.Bool
}

// Release gives the load back. Only the first call has an effect.
func (g *guard) Release() {
	if !g.released.CompareAndSwap(false, true) {
		return
	}
	g.t.w.ranks[g.t.rank].Add(-1)
	if g.t.w.removed.Load() {
		g.pool.reap(g.t.w)
	}
}
