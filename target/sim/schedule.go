package sim

import (
	"slices"
	"time"
)

// plan builds the next step like vLLM's scheduler: running sequences first
// (one decode token each, or their next prefill chunk), preempting the most
// recently admitted sequence when KV blocks run out; then waiting sequences
// in arrival order while the token budget, max_num_seqs and free blocks
// allow. It returns the step's modelled duration; now is the time the step
// is planned at.
func (e *engine) plan(now time.Time) time.Duration {
	e.items = e.items[:0]
	e.waiting = append(e.waiting, e.incoming...)
	clear(e.incoming)
	e.incoming = e.incoming[:0]
	e.submitted = time.Time{}
	e.dropAborted(now)
	if len(e.resets) > 0 {
		e.applyResets()
	}
	e.loadTime = 0

	bs := e.cfg.blockSize
	budget := e.cfg.maxBatched
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.known()-s.computed, budget)
		need := ceilDiv(s.computed+n, bs) - len(s.blocks)
		for need > e.pool.nfree {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == s {
				break
			}
		}
		if i >= len(e.running) { // s itself was preempted
			break
		}
		if need > 0 { // most steps of a decoding sequence need no block
			s.blocks = e.pool.alloc(s.blocks, need)
		}
		decode := s.generated() > 0 && n == 1 && s.computed == s.known()-1
		e.items = append(e.items, stepItem{s: s, n: n, decode: decode})
		budget -= n
	}
	// vLLM admits nothing new in a step that had to preempt.
	for !preempted && len(e.waiting) > 0 && len(e.running) < e.cfg.maxNumSeqs && budget > 0 {
		s := e.waiting[0]
		n, ok := e.admit(s, budget, now)
		if !ok {
			break
		}
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		e.running = append(e.running, s)
		e.items = append(e.items, stepItem{s: s, n: n})
		budget -= n
	}
	e.publishGauges()
	if e.kv != nil {
		e.kv.flush(e)
	}
	if len(e.items) > 0 {
		e.m.kvUsageStep.Observe(e.pool.usage())
	}

	b := &e.batch
	b.Chunks, b.DecodeSeqs, b.DecodeContext = b.Chunks[:0], 0, 0
	for _, it := range e.items {
		if it.decode {
			b.DecodeSeqs++
			b.DecodeContext += it.s.computed
		} else {
			b.Chunks = append(b.Chunks, Chunk{Tokens: it.n, Prefix: it.s.computed})
		}
	}
	// CPU-tier loads run before the forward pass that reads the blocks.
	return e.cfg.profile.BatchTime(b) + e.loadTime
}

// admit allocates KV for s's first chunk, reusing the longest resident
// prefix. It fails without side effects when the blocks do not fit.
func (e *engine) admit(s *seq, budget int, now time.Time) (int, bool) {
	bs := e.cfg.blockSize
	known := s.known()
	hit, cpuHit, limit := 0, 0, 0
	if e.cfg.prefixCache {
		s.ensureHashes(known/bs, bs)
		// Like vLLM, always recompute at least the last token: its logits
		// produce the next token.
		limit = (known - 1) / bs
		e.hitIDs = e.pool.lookup(s.hashes, limit, e.hitIDs[:0])
		hit = len(e.hitIDs)
		if e.tier != nil {
			cpuHit = e.tier.hits(s.hashes[hit:], limit-hit)
		}
	}
	start := max((hit+cpuHit)*bs, s.remoteKV)
	n := min(known-start, budget)
	fresh := ceilDiv(start+n, bs) - hit
	if e.pool.freeNeeded(e.hitIDs[:hit], fresh) > e.pool.nfree {
		return 0, false
	}
	if s.blocks == nil {
		// Room for every block the sequence can need, so that neither this
		// admission nor its later chunks and decode steps grow the slice.
		s.blocks = make([]int32, 0, ceilDiv(s.promptLen+s.target, bs))
	}
	for _, id := range e.hitIDs[:hit] {
		e.pool.acquire(id)
		s.blocks = append(s.blocks, id)
	}
	loaded := s.hashes[hit : hit+cpuHit]
	if cpuHit > 0 {
		e.tier.touch(loaded) // before allocation can push them out
	}
	s.blocks = e.pool.alloc(s.blocks, fresh)
	// Blocks loaded from the CPU tier hold their content at once.
	for j, h := range loaded {
		if e.pool.register(s.blocks[hit+j], h) && e.kv != nil {
			e.kv.stored(s, hit+j, bs)
		}
	}
	if cpuHit > 0 {
		e.loadTime += time.Duration(cpuHit) * e.tier.loadBlock
		e.m.offloaded(cpuHit, time.Duration(cpuHit)*e.tier.loadBlock)
	}
	s.computed, s.registered = start, hit+cpuHit
	if !s.admitted {
		s.admitted = true
		s.scheduled = now
		// Like vLLM's num_cached_tokens, local and external hits count.
		s.cachedTokens.Store(int32((hit + cpuHit) * bs))
		e.m.admitted(s, hit*bs)
		if e.tier != nil {
			e.m.externalQueries.Add(float64(max(0, limit-hit) * bs))
			e.m.externalHits.Add(float64(cpuHit * bs))
		}
	}
	s.remoteKV = 0 // after a preemption the pulled KV is gone: recompute
	return n, true
}

// preempt frees s's KV (its full blocks stay cached) and requeues it at the
// front; its generated tokens are kept and recomputed as prompt later.
func (e *engine) preempt(s *seq) {
	e.releaseBlocks(s.blocks)
	s.blocks = s.blocks[:0]
	s.computed, s.registered = 0, 0
	e.waiting = slices.Insert(e.waiting, 0, s)
	e.m.preemptions.Inc()
}

// releaseBlocks frees blocks tail first, so a sequence's last blocks are
// evicted before its shared prefix.
func (e *engine) releaseBlocks(blocks []int32) { e.pool.releaseAll(blocks) }
