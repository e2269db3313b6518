package policy

// random picks uniformly among the candidates.
type random struct{ rnd Rand }

var _ Policy = (*random)(nil)

func (*random) Name() string { return Random }

func (p *random) Pick(_ Request, cands []Candidate) (Decision, bool) {
	if len(cands) == 0 {
		return Decision{}, false
	}
	return Decision{Index: p.rnd.IntN(len(cands))}, true
}
