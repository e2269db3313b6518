package sim

import (
	"fmt"

	"github.com/autoinfer/autoinfer/target/mixhash"
)

// HeldPrompt is one request's prompt as Held counts it on any worker:
// hashed once per engine model and block size (a route receipt asks every
// candidate of one decision), so the cost of asking all of them is one
// hash of the prompt and a cache lookup per candidate and block held.
type HeldPrompt struct {
	f      *Fleet
	r      FleetRequest
	hashes map[heldCfg][]uint64
}

// heldCfg is what a prompt's reusable block hashes depend on.
type heldCfg struct {
	model string
	bs    int
}

// HeldPrompt is r's prompt (its Body, or its Shape with Prompt or Spans,
// blind or not; r.Worker and r.Rank are ignored) for Held.
func (f *Fleet) HeldPrompt(r FleetRequest) *HeldPrompt {
	return &HeldPrompt{f: f, r: r}
}

// Held is how many leading tokens of the prompt the GPU prefix cache of
// worker w's rank holds now, or of any of its ranks when rank is -1 (a
// worker the router does not address by rank: its KV events come as one
// stream, so a router's copy of its cache holds every rank's blocks): the
// full blocks an admission could reuse, at most all but the one ending on
// the last prompt token, which an engine always computes; 0 without
// prefix caching. It reads the engine's own block hashes (the fleet's
// memo for spans) and its cache's index, touching neither the cache's
// order nor any metric, so a route receipt may ask it of every candidate
// without changing the run.
func (p *HeldPrompt) Held(w, rank int) (int, error) {
	f := p.f
	if w < 0 || w >= len(f.servers) || rank < -1 || rank >= len(f.servers[w].ranks) {
		return 0, fmt.Errorf("sim fleet: no worker %d rank %d", w, rank)
	}
	cfg := &f.servers[w].cfg
	if !cfg.prefixCache {
		return 0, nil
	}
	hashes, err := p.reusable(w)
	if err != nil {
		return 0, err
	}
	first, last := f.first[w], f.first[w]+len(f.servers[w].ranks)
	if rank >= 0 {
		first, last = first+rank, first+rank+1
	}
	n := 0
	for ; n < len(hashes) && f.resident(hashes[n], first, last); n++ {
	}
	return n * cfg.blockSize, nil
}

// reusable is the hashes of the prompt's blocks an admission on worker w
// could reuse, computed once per model and block size.
func (p *HeldPrompt) reusable(w int) ([]uint64, error) {
	cfg := &p.f.servers[w].cfg
	k := heldCfg{cfg.model, cfg.blockSize}
	if h, ok := p.hashes[k]; ok {
		return h, nil
	}
	r := p.r
	r.Worker, r.Rank = w, 0
	var req *genRequest
	var err error
	if r.Shape != nil { // its length is no matter here
		var e *apiError
		if req, e = r.Shape.withPrompt(r.Prompt, r.Spans); e != nil {
			err = fmt.Errorf("%s: %s", e.typ, e.msg)
		}
	} else {
		req, err = p.f.parse(r)
	}
	if err != nil {
		return nil, err
	}
	var hashes []uint64
	if seed := mixhash.FNV64a(cfg.model); req.spans != nil {
		_, hashes = hashSpans(seed, req.spans, k.bs, &p.f.memo)
	} else {
		_, hashes = hashPrompt(seed, req.prompt, k.bs)
	}
	hashes = hashes[:min(len(hashes), max(req.promptLen()-1, 0)/k.bs)]
	if p.hashes == nil {
		p.hashes = map[heldCfg][]uint64{}
	}
	p.hashes[k] = hashes
	return hashes, nil
}

// resident reports whether a GPU prefix cache of the global ranks
// [first, last) holds the block hashed h.
func (f *Fleet) resident(h uint64, first, last int) bool {
	for _, e := range f.ranks[first:last] {
		if _, ok := e.pool.cache.get(h, e.pool.blocks); ok {
			return true
		}
	}
	return false
}
