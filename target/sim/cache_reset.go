package sim

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// resetReq is one POST /reset_prefix_cache waiting for the engine loop: the
// loop applies it between steps, when no step is using the running
// sequences' blocks.
type resetReq struct {
	running  bool      // reset_running_requests: preempt running sequences first
	external bool      // reset_external: also clear the CPU tier (the connector's cache)
	done     chan bool // receives whether the GPU prefix cache was cleared
}

// handleResetPrefixCache is vLLM's POST /reset_prefix_cache (served by vLLM
// with VLLM_SERVER_DEV_MODE=1): it resets every rank's prefix cache and
// answers 200 with an empty body whether or not a rank refused, as vLLM's
// API server does not check. A rank refuses while any block is referenced
// (running sequences, KV held for a decode peer) unless
// reset_running_requests=true preempts the running ones first; the refusal
// is logged, as vLLM logs it.
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	running, err := queryBool(r, "reset_running_requests")
	if err != nil {
		writeError(w, err)
		return
	}
	external, err := queryBool(r, "reset_external")
	if err != nil {
		writeError(w, err)
		return
	}
	for i, e := range s.ranks {
		ok, err := e.resetPrefixCache(r.Context(), running, external)
		switch {
		case err != nil:
			return // the client left or the engine stopped; nothing to answer
		case ok:
			s.logger.Info("prefix cache reset", "rank", i)
		default:
			s.logger.Warn("failed to reset prefix cache: some blocks are still in use", "rank", i)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// queryBool parses a boolean query parameter the way FastAPI does
// (true/false, 1/0, yes/no, on/off; absent is false).
func queryBool(r *http.Request, name string) (bool, *apiError) {
	v := r.URL.Query().Get(name)
	switch strings.ToLower(v) {
	case "", "false", "0", "no", "off", "f", "n":
		return false, nil
	case "true", "1", "yes", "on", "t", "y":
		return true, nil
	}
	return false, badRequest(name, "%s: must be a boolean, got %s", name, strconv.Quote(v))
}

// resetPrefixCache asks the loop to reset this rank's prefix cache and
// waits for the outcome.
func (e *engine) resetPrefixCache(ctx context.Context, running, external bool) (bool, error) {
	req := resetReq{running: running, external: external, done: make(chan bool, 1)}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return false, errEngineStopped
	}
	e.resets = append(e.resets, req)
	e.mu.Unlock()
	e.poke()
	select {
	case ok := <-req.done:
		return ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// applyResets runs the pending resets; the loop calls it with mu held
// before planning a step, so no block is in use by a step in flight.
func (e *engine) applyResets() {
	for _, req := range e.resets {
		if req.running {
			for i := len(e.running) - 1; i >= 0; i-- {
				e.preempt(e.running[i])
			}
			e.running = e.running[:0]
		}
		if req.external && e.tier != nil {
			e.tier.lru.Init()
			clear(e.tier.at)
		}
		ok := e.pool.resetCache()
		if ok && e.kv != nil {
			e.kv.cleared()
		}
		req.done <- ok
	}
	clear(e.resets)
	e.resets = e.resets[:0]
	e.publishGauges()
}

// failResets answers every pending reset as refused; called on shutdown
// with mu held.
func (e *engine) failResets() {
	for _, req := range e.resets {
		req.done <- false
	}
	e.resets = nil
}

// resetCache forgets every cached block, as vLLM's BlockPool does, but only
// when no block is referenced; it reports whether it did.
func (p *blockPool) resetCache() bool {
	if p.nfree != p.size() {
		return false
	}
	for i := range p.blocks {
		p.blocks[i].state &^= blockCached
	}
	p.cache.reset()
	return true
}
