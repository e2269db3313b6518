package sim

import (
	"fmt"

	"github.com/autoinfer/autoinfer/target/mixhash"
)

// Held is how many leading prompt tokens of r (its Body, or its Shape
// with Prompt or Spans, blind or not) the GPU prefix cache of worker
// r.Worker's rank r.Rank holds now, or of any of its ranks when r.Rank is
// -1 (a worker the router does not address by rank: its KV events come as
// one stream, so a router's copy of its cache holds every rank's blocks):
// the full blocks an admission could reuse, at most all but the one
// ending on the last prompt token, which an engine always computes; 0
// without prefix caching. It reads the engine's own block hashes (the
// fleet's memo for spans) and its cache's index, touching neither the
// cache's order nor any metric, so a route receipt may ask it of every
// candidate without changing the run.
func (f *Fleet) Held(r FleetRequest) (int, error) {
	if r.Worker < 0 || r.Worker >= len(f.servers) || r.Rank < -1 || r.Rank >= len(f.servers[r.Worker].ranks) {
		return 0, fmt.Errorf("sim fleet: no worker %d rank %d", r.Worker, r.Rank)
	}
	cfg := &f.servers[r.Worker].cfg
	if !cfg.prefixCache {
		return 0, nil
	}
	var req *genRequest
	var err error
	if r.Shape != nil { // its length is no matter here
		var e *apiError
		if req, e = r.Shape.withPrompt(r.Prompt, r.Spans); e != nil {
			err = fmt.Errorf("%s: %s", e.typ, e.msg)
		}
	} else {
		req, err = f.parse(r)
	}
	if err != nil {
		return 0, err
	}
	bs := cfg.blockSize
	var hashes []uint64
	if seed := mixhash.FNV64a(cfg.model); req.spans != nil {
		_, hashes = hashSpans(seed, req.spans, bs, &f.memo)
	} else {
		_, hashes = hashPrompt(seed, req.prompt, bs)
	}
	hashes = hashes[:min(len(hashes), max(req.promptLen()-1, 0)/bs)]
	first, last := f.first[r.Worker], f.first[r.Worker]+len(f.servers[r.Worker].ranks)
	if r.Rank >= 0 {
		first, last = first+r.Rank, first+r.Rank+1
	}
	n := 0
	for ; n < len(hashes) && f.resident(hashes[n], first, last); n++ {
	}
	return n * bs, nil
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
