package policy

import "sync/atomic"

// leastLoaded sends to the candidate with the lowest load; ties rotate
// round-robin so equal workers share traffic evenly instead of the first
// one in the list taking every tied request.
type leastLoaded struct{ next atomic.Uint64 }

var _ Policy = (*leastLoaded)(nil)

func (*leastLoaded) Name() string { return LeastLoaded }

func (p *leastLoaded) Pick(_ Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	minLoad, ties := cands[0].Load(), 0
	for _, c := range cands {
		switch l := c.Load(); {
		case l < minLoad:
			minLoad, ties = l, 1
		case l == minLoad:
			ties++
		}
	}
	k := int((p.next.Add(1) - 1) % uint64(ties))
	for i, c := range cands {
		if c.Load() == minLoad {
			if k == 0 {
				return Decision{Index: i}, true
			}
			k--
		}
	}
	return Decision{Index: 0}, true // unreachable: ties ≥ 1
}
