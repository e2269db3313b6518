package sim

import "slices"

// heldKV is KV a prefill engine keeps for a decode engine to pull, like
// vLLM's NixlConnector keeps a request's blocks after a do_remote_decode
// prefill until the peer reads them or the hold times out.
type heldKV struct {
	blocks    []int32
	tokens    int    // prompt tokens covered
	promptKey uint64 // (model, prompt) key: a puller with another prompt is refused
	timer     Timer
}

// hold moves s's blocks into the held set under s.id; called by the loop
// with mu held. It returns the block ids for kv_transfer_params.
func (e *engine) hold(s *seq) []int {
	h := &heldKV{blocks: slices.Clone(s.blocks), tokens: s.promptLen, promptKey: s.samp.key}
	id := s.id
	// Ids come from X-Request-Id, which a client may reuse (a router retrying
	// a prefill leg): the newer prefill replaces the older, whose blocks
	// would otherwise stay referenced for good.
	if old, ok := e.held[id]; ok {
		old.timer.Stop()
		e.releaseBlocks(old.blocks)
	}
	h.timer = e.cfg.clock.AfterFunc(e.cfg.holdTimeout, func() {
		if e.releaseHeld(id, h) {
			e.m.kvHoldExpired.Inc()
		}
	})
	e.held[id] = h
	e.m.kvHeld.Set(float64(len(e.held)))
	ids := make([]int, len(h.blocks))
	for i, b := range h.blocks {
		ids[i] = int(b)
	}
	return ids
}

// lookupHeld returns the held KV of request id. Its fields never change
// after hold, so the caller may read them without the lock.
func (e *engine) lookupHeld(id string) (*heldKV, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.held[id]
	return h, ok
}

// releaseHeld frees hold h of request id (pulled or expired) and wakes the
// loop, since waiting requests may fit now. A newer hold under the same id
// stays: the pull or timer was for the one it replaced.
func (e *engine) releaseHeld(id string, h *heldKV) bool {
	e.mu.Lock()
	ok := e.held[id] == h
	if ok {
		delete(e.held, id)
		h.timer.Stop()
		e.releaseBlocks(h.blocks)
		e.m.kvHeld.Set(float64(len(e.held)))
		e.publishGauges()
	}
	e.mu.Unlock()
	if ok {
		e.poke()
	}
	return ok
}

// dropHeld releases everything held; called on shutdown with mu held.
func (e *engine) dropHeld() {
	for id, h := range e.held {
		h.timer.Stop()
		e.releaseBlocks(h.blocks)
		delete(e.held, id)
	}
	e.m.kvHeld.Set(0)
}
