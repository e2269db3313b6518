package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/ledger"
)

// Round is one round of successive halving.
type Round struct {
	// Index counts from 1; Fraction is the share of the traffic each
	// candidate ran on (1 in the last round).
	Index    int     `json:"round"`
	Fraction float64 `json:"fraction"`
	// Candidates ran in the round (Resumed of them already had a row);
	// Kept go on to the next round (all of them in the last).
	Candidates int `json:"candidates"`
	Resumed    int `json:"resumed"`
	Kept       int `json:"kept"`
}

// fractions are the rounds' traffic shares: min, min·η, … while below 1
// (within 1e-6: 1/9·3·3 is the whole traffic), then 1.
func (h Halving) fractions() []float64 {
	var out []float64
	for f := h.MinFraction; f < 1-1e-6; f *= float64(h.Eta) {
		out = append(out, f)
	}
	return append(out, 1)
}

// halve runs successive halving over cs: each round but the last runs the
// survivors on a shortened copy of the traffic (a virtual row of the
// search each, its name saying the round and fraction) and keeps the best
// ⌈n/η⌉ by the objective; the last runs the survivors on the whole
// traffic. It returns the last round's candidates: only full-traffic rows
// are ranked.
func halve(ctx context.Context, s Spec, cs []Candidate, o Options) ([]Candidate, error) {
	live := cs
	for i, f := range s.Halving.fractions() {
		if len(live) == 0 {
			return nil, nil
		}
		r := Round{Index: i + 1, Fraction: f, Candidates: len(live)}
		if f == 1 {
			if err := evaluateAll(ctx, s, live, batchOf(r.Index, f, live), o); err != nil {
				return nil, err
			}
			r.Resumed, r.Kept = countResumed(live), len(live)
			if o.Round != nil {
				o.Round(r)
			}
			return live, nil
		}
		short := make([]Candidate, len(live))
		for j, c := range live {
			t, err := shorten(c, r.Index, f)
			if err != nil {
				return nil, err
			}
			short[j] = t
		}
		if err := evaluateAll(ctx, s, short, batchOf(r.Index, f, live), o); err != nil {
			return nil, err
		}
		keep := int(math.Ceil(float64(len(live)) / float64(s.Halving.Eta)))
		best := order(s, short)[:keep]
		next := make([]Candidate, 0, keep)
		for _, b := range best {
			next = append(next, live[b])
		}
		r.Resumed, r.Kept = countResumed(short), keep
		if o.Round != nil {
			o.Round(r)
		}
		live = next
	}
	return live, nil
}

// shorten is c on the first fraction f of its traffic: num_prompts (and
// max_seconds, when set) scaled, at least one request. The name keeps the
// stream's (the part before the first "/") and adds the round, so the
// shortened stream is the same workload's; the spec hash, and so the row's
// identity, differs from the full-traffic candidate's.
func shorten(c Candidate, round int, f float64) (Candidate, error) {
	t := c.Trial
	w := &t.Workload
	if w.NumPrompts == 0 && w.MaxSeconds == 0 {
		return c, fmt.Errorf("search.strategy halving: candidate %s: set workload.num_prompts or workload.max_seconds (the traffic to shorten)", t.Name)
	}
	if w.NumPrompts > 0 {
		w.NumPrompts = max(1, int(math.Ceil(float64(w.NumPrompts)*f)))
	}
	if w.MaxSeconds > 0 {
		w.MaxSeconds *= f
	}
	sep := "/"
	if strings.Contains(t.Name, "/") {
		sep = ","
	}
	t.Name += sep + "halving=r" + strconv.Itoa(round) + "@" + strconv.FormatFloat(f, 'g', 3, 64)
	h, err := t.Hash()
	if err != nil {
		return c, err
	}
	t.SpecHash = h
	c.Trial, c.RowID, c.Resumed, c.Values, c.Violations = t, 0, false, nil, nil
	return c, nil
}

// order is the indices of cs best first: feasible candidates by the
// objective (a Pareto objective by successive fronts, each by its first
// metric), then infeasible ones likewise, then failed ones; ties by name.
func order(s Spec, cs []Candidate) []int {
	metrics := rankMetrics(s)
	var feasible, infeasible, failed []int
	for i, c := range cs {
		switch {
		case c.Status != ledger.StatusOK:
			failed = append(failed, i)
		case !c.Feasible():
			infeasible = append(infeasible, i)
		default:
			feasible = append(feasible, i)
		}
	}
	byName := func(a, b int) int { return cmp.Compare(cs[a].Trial.Name, cs[b].Trial.Name) }
	return slices.Concat(layers(cs, feasible, metrics), layers(cs, infeasible, metrics), slices.SortedFunc(slices.Values(failed), byName))
}

// layers orders idx by the objective: one metric best first, or two by
// successive Pareto fronts.
func layers(cs []Candidate, idx []int, ms []ledger.Metric) []int {
	sub := make([]Candidate, len(idx))
	pos := map[string]int{}
	for i, j := range idx {
		sub[i] = cs[j]
		pos[cs[j].Trial.Name] = j
	}
	var out []int
	if len(ms) == 1 {
		sortBy(sub, ms[0])
		for _, c := range sub {
			out = append(out, pos[c.Trial.Name])
		}
		return out
	}
	for len(sub) > 0 {
		f := front(sub, ms[0], ms[1])
		on := map[string]bool{}
		for _, c := range f {
			out = append(out, pos[c.Trial.Name])
			on[c.Trial.Name] = true
		}
		sub = slices.DeleteFunc(sub, func(c Candidate) bool { return on[c.Trial.Name] })
	}
	return out
}

func countResumed(cs []Candidate) int {
	n := 0
	for _, c := range cs {
		if c.Resumed {
			n++
		}
	}
	return n
}
