package ledger

import (
	"cmp"
	"slices"
)

// markSeparable finds the points whose place relative to the front the
// data cannot settle. The front (markFront) compares means; a replicate
// group's interval says where its true value may lie. Point Q separably
// dominates P when Q's worst corner (the worse end of each interval) is at
// least as good as P's best corner on both axes and strictly better on
// one; a row run once has a zero-width interval at its value, so between
// such rows this is plain dominance. A point off the front that no
// eligible point separably dominates may belong on it: it is not
// separable from the front points that dominate it by their means, and
// each of those is not separable from it. Both sides record the other in
// NotSeparableFrom. Rows without replicates never become inseparable from
// each other, so a ledger without repeated trials keeps its front as is.
func markSeparable(pts []Point, xd, yd Direction, includeStale bool) {
	var eligible, front []int
	for i, p := range pts {
		if !p.Stale || includeStale {
			eligible = append(eligible, i)
			if p.OnFront {
				front = append(front, i)
			}
		}
	}
	worst := make([]corner, len(eligible))
	best := make([]corner, len(eligible))
	for k, i := range eligible {
		worst[k], best[k] = corners(pts[i], xd, yd)
	}
	dominated := dominatedBy(best, worst, xd, yd)
	for k, i := range eligible {
		p := &pts[i]
		if p.OnFront || dominated[k] {
			continue
		}
		for _, j := range front {
			f := &pts[j]
			if dominates(*f, *p, xd, yd) {
				p.NotSeparableFrom = append(p.NotSeparableFrom, f.ID)
				f.NotSeparableFrom = append(f.NotSeparableFrom, p.ID)
			}
		}
	}
}

// corner is a point in metric space.
type corner struct{ x, y float64 }

// corners returns a point's worst and best plausible values: the ends of
// its intervals, or the value itself for a row run once.
func corners(p Point, xd, yd Direction) (worst, best corner) {
	xlo, xhi, ylo, yhi := p.X, p.X, p.Y, p.Y
	if p.CI != nil {
		xlo, xhi, ylo, yhi = p.CI.XLo, p.CI.XHi, p.CI.YLo, p.CI.YHi
	}
	worst, best = corner{xhi, yhi}, corner{xlo, ylo}
	if xd == Maximize {
		worst.x, best.x = xlo, xhi
	}
	if yd == Maximize {
		worst.y, best.y = ylo, yhi
	}
	return worst, best
}

// dominates reports whether a's means dominate b's: at least as good on
// both axes, strictly better on one.
func dominates(a, b Point, xd, yd Direction) bool {
	return !xd.Better(b.X, a.X) && !yd.Better(b.Y, a.Y) && (xd.Better(a.X, b.X) || yd.Better(a.Y, b.Y))
}

// dominatedBy reports for each target whether some dominator is at least
// as good on both axes and strictly better on one, in O(n log n): sweep
// the targets best x first, keeping the best y among dominators with
// strictly better x, and look up the best y among dominators with equal x.
func dominatedBy(targets, dominators []corner, xd, yd Direction) []bool {
	xOrder := func(a, b float64) int {
		if xd == Maximize {
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	}
	ds := slices.Clone(dominators)
	slices.SortFunc(ds, func(a, b corner) int { return xOrder(a.x, b.x) })
	sameX := map[float64]float64{}
	for _, d := range ds {
		if y, ok := sameX[d.x]; !ok || yd.Better(d.y, y) {
			sameX[d.x] = d.y
		}
	}
	order := make([]int, len(targets))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return xOrder(targets[a].x, targets[b].x) })
	out := make([]bool, len(targets))
	var bestY float64
	have, next := false, 0
	for _, i := range order {
		t := targets[i]
		for next < len(ds) && xOrder(ds[next].x, t.x) < 0 {
			if !have || yd.Better(ds[next].y, bestY) {
				bestY, have = ds[next].y, true
			}
			next++
		}
		y, tie := sameX[t.x]
		out[i] = (have && !yd.Better(t.y, bestY)) || (tie && yd.Better(y, t.y))
	}
	return out
}
