package policy

// powerOfTwo samples two distinct candidates and takes the less loaded one
// (ties to the first sampled). Two random choices avoid the herd behaviour
// of least-loaded under stale signals while still exponentially shrinking
// the maximum load compared with random — and it only works when the loads
// are real: this router's are its exact in-flight counts.
type powerOfTwo struct{ rnd Rand }

var _ Policy = (*powerOfTwo)(nil)

func (*powerOfTwo) Name() string { return PowerOfTwo }

func (p *powerOfTwo) Pick(_ Request, cands []Candidate) (Decision, bool) {
	switch len(cands) {
	case 0:
		return Decision{}, false
	case 1:
		return Decision{Index: 0}, true
	}
	a := p.rnd.IntN(len(cands))
	b := p.rnd.IntN(len(cands) - 1)
	if b >= a {
		b++ // distinct from a, still uniform
	}
	if cands[b].Load() < cands[a].Load() {
		return Decision{Index: b}, true
	}
	return Decision{Index: a}, true
}
