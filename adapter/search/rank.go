package search

import (
	"cmp"
	"slices"

	"github.com/autoinfer/autoinfer/ledger"
)

// Ranked is a search's answer over its evaluated candidates.
type Ranked struct {
	// Metrics are the objective's metrics (one, or two for a front).
	Metrics []ledger.Metric
	// Top are the best feasible candidates under a single objective, best
	// first (ties by name); empty for a Pareto objective.
	Top []Candidate
	// Front are the feasible candidates no other feasible one beats on
	// both metrics, ordered by the first (Pareto objective only).
	Front []Candidate
	// Infeasible and Failed count candidates that broke an SLO and that
	// did not run ok.
	Infeasible, Failed int
}

// Rank orders cs under s's objective.
func Rank(s Spec, cs []Candidate) Ranked {
	var r Ranked
	var ok []Candidate
	for _, c := range cs {
		switch {
		case c.Status != ledger.StatusOK:
			r.Failed++
		case !c.Feasible():
			r.Infeasible++
		default:
			ok = append(ok, c)
		}
	}
	r.Metrics = rankMetrics(s)
	if len(r.Metrics) == 2 {
		r.Front = front(ok, r.Metrics[0], r.Metrics[1])
		return r
	}
	sortBy(ok, r.Metrics[0])
	r.Top = ok[:min(len(ok), s.Top)]
	return r
}

// rankMetrics are the objective's metrics with their directions.
func rankMetrics(s Spec) []ledger.Metric {
	o := s.Objective
	if len(o.Pareto) == 2 {
		x, _ := lookup(o.Pareto[0])
		y, _ := lookup(o.Pareto[1])
		return []ledger.Metric{x, y}
	}
	m, _ := lookup(cmp.Or(o.Maximize, o.Minimize))
	if o.Minimize != "" {
		m.Direction = ledger.Minimize
	} else {
		m.Direction = ledger.Maximize
	}
	return []ledger.Metric{m}
}

// sortBy orders cs best first on m, ties by name.
func sortBy(cs []Candidate, m ledger.Metric) {
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		va, vb := a.Values[m.Name], b.Values[m.Name]
		switch {
		case m.Direction.Better(va, vb):
			return -1
		case m.Direction.Better(vb, va):
			return 1
		}
		return cmp.Compare(a.Trial.Name, b.Trial.Name)
	})
}

// front is the candidates no other beats on both x and y (at least as good
// on both and better on one), ordered best-first on x.
func front(cs []Candidate, x, y ledger.Metric) []Candidate {
	var out []Candidate
	for i, c := range cs {
		dominated := false
		for j, d := range cs {
			if i == j {
				continue
			}
			cx, cy, dx, dy := c.Values[x.Name], c.Values[y.Name], d.Values[x.Name], d.Values[y.Name]
			if !x.Direction.Better(cx, dx) && !y.Direction.Better(cy, dy) && (x.Direction.Better(dx, cx) || y.Direction.Better(dy, cy)) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, c)
		}
	}
	sortBy(out, x)
	return out
}
