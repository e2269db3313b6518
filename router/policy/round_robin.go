package policy

import "sync/atomic"

// roundRobin keeps one counter modulo the current candidate list, so a
// worker that turns unhealthy shifts the rotation instead of leaving a hole.
type roundRobin struct{ next atomic.Uint64 }

var _ Policy = (*roundRobin)(nil)

func (*roundRobin) Name() string { return RoundRobin }

func (p *roundRobin) Pick(_ Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	n := p.next.Add(1) - 1
	return Decision{Index: int(n % uint64(len(cands)))}, true
}
