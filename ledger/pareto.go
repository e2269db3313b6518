package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// ParetoQuery asks for the front of two metrics over the ok rows the
// filter selects (Filter.Status is ignored).
type ParetoQuery struct {
	X, Y   string
	Filter Filter
	// AllPoints returns every matching ok row (stale ones too), for plots;
	// otherwise only the front's rows come back.
	AllPoints bool
}

// Point is one ok row in metric space, or one complete replicate group:
// then X and Y are the means across its replicates, CI holds their
// intervals and ID is the group's first row.
type Point struct {
	ID      int64  `db:"id" json:"id"`
	Name    string `db:"name" json:"name"`
	SweepID string `db:"sweep_id" json:"sweep_id"`
	Stale   bool   `db:"stale" json:"stale"`
	// Clock is "real" or "virtual" (a prediction: shown labelled).
	Clock   string  `db:"clock" json:"clock"`
	X       float64 `db:"x" json:"x"`
	Y       float64 `db:"y" json:"y"`
	OnFront bool    `db:"-" json:"on_front"`

	ReplicateGroup string   `db:"replicate_group" json:"replicate_group,omitempty"`
	Replicates     int      `db:"replicates" json:"replicates,omitempty"`
	CI             *PointCI `db:"-" json:"ci,omitempty"`
	// NotSeparableFrom lists the points this one cannot be told apart from
	// (see markSeparable): for a front point, points it dominates whose
	// intervals reach it; for a point off the front, the front points
	// that dominate it only by their means.
	NotSeparableFrom []int64 `db:"-" json:"not_separable_from,omitempty"`
}

// PointCI is a replicate group's intervals on both axes.
type PointCI struct {
	XLo float64 `json:"x_low"`
	XHi float64 `json:"x_high"`
	YLo float64 `json:"y_low"`
	YHi float64 `json:"y_high"`
}

// Separable reports whether the data tell this point apart from every
// point it is compared with on the front.
func (p Point) Separable() bool { return len(p.NotSeparableFrom) == 0 }

// Front is a Pareto query's answer ordered best-first on X, with OnFront
// set on the rows no eligible row dominates. Stale rows are eligible only
// with Filter.IncludeStale. Points holds the front and the points not
// separable from it, or with AllPoints every matching ok row.
type Front struct {
	X, Y   Metric
	Points []Point
}

// OnFront returns the front's points, best X first.
func (f Front) OnFront() []Point {
	var out []Point
	for _, p := range f.Points {
		if p.OnFront {
			out = append(out, p)
		}
	}
	return out
}

// Pareto computes the front; the metric names are checked against
// MetricList before they reach SQL. Without AllPoints, SQLite prunes the
// rows run once: in x order, a row can only be on the front if its y is at
// least as good as the best y of every row before it (a window aggregate),
// which leaves the front plus ties; markFront then decides exactly.
// Dominance is transitive, so every pruned row is dominated by a row that
// was kept, and (having no interval) separably so.
//
// A replicate group competes as one point, at its means, only when every
// one of its replicates is selected: ok, fresh (or IncludeStale) and within
// the bounds. A group with a failed or missing replicate does not compete.
func (l *Ledger) Pareto(ctx context.Context, q ParetoQuery) (Front, error) {
	x, err := LookupMetric(q.X)
	if err != nil {
		return Front{}, fmt.Errorf("x: %w", err)
	}
	y, err := LookupMetric(q.Y)
	if err != nil {
		return Front{}, fmt.Errorf("y: %w", err)
	}
	f := q.Filter
	f.Status, f.Limit = StatusOK, 0
	includeStale := f.IncludeStale
	f.IncludeStale = includeStale || q.AllPoints
	where, args, err := f.sql(l.d)
	if err != nil {
		return Front{}, err
	}
	// A row without one of the figures (NULL: not exported, or older than
	// the column) has no point in this space; replicate groups are added
	// as one point each further on.
	singles := andWhere(where, "replicate_group = ''")
	singles += fmt.Sprintf(" AND %s IS NOT NULL AND %s IS NOT NULL", x.Name, y.Name)
	sqlq := fmt.Sprintf("SELECT id, name, sweep_id, stale, clock, %s AS x, %s AS y FROM trials%s", x.Name, y.Name, singles)
	if !q.AllPoints {
		xOrder, yBest, yCmp := "ASC", "MIN", "<="
		if x.Direction == Maximize {
			xOrder = "DESC"
		}
		if y.Direction == Maximize {
			yBest, yCmp = "MAX", ">="
		}
		sqlq = fmt.Sprintf(`SELECT id, name, sweep_id, stale, clock, x, y FROM (
			SELECT id, name, sweep_id, stale, clock, %[1]s AS x, %[2]s AS y,
				%[3]s(%[2]s) OVER (ORDER BY %[1]s %[4]s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best
			FROM trials%[5]s) AS running
			WHERE best IS NULL OR y %[6]s best`, x.Name, y.Name, yBest, xOrder, singles, yCmp)
	}
	var pts []Point
	if err := l.db.SelectContext(ctx, &pts, l.db.Rebind(sqlq), args...); err != nil {
		return Front{}, fmt.Errorf("pareto query: %w", err)
	}
	groups, err := l.groupPoints(ctx, x, y, where, args)
	if err != nil {
		return Front{}, err
	}
	pts = append(pts, groups...)
	markFront(pts, x.Direction, y.Direction, includeStale)
	markSeparable(pts, x.Direction, y.Direction, includeStale)
	if !q.AllPoints {
		pts = slices.DeleteFunc(pts, func(p Point) bool { return !p.OnFront && p.Separable() })
	}
	return Front{X: x, Y: y, Points: pts}, nil
}

// groupPoints returns one point per complete replicate group among the
// rows where selects: the means of x and y with their intervals.
func (l *Ledger) groupPoints(ctx context.Context, x, y Metric, where string, args []any) ([]Point, error) {
	var rows []Point
	q := fmt.Sprintf("SELECT id, name, sweep_id, stale, clock, replicate_group, replicates, %s AS x, %s AS y FROM trials%s ORDER BY replicate_group, id",
		x.Name, y.Name, andWhere(where, "replicate_group != ''"))
	if err := l.db.SelectContext(ctx, &rows, l.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("pareto query (replicate groups): %w", err)
	}
	var out []Point
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].ReplicateGroup == rows[0].ReplicateGroup {
			n++
		}
		members := rows[:n]
		rows = rows[n:]
		if n != members[0].Replicates {
			continue // a replicate failed, is missing, stale or out of bounds
		}
		p := members[0]
		xs, ys := make([]float64, n), make([]float64, n)
		for i, m := range members {
			xs[i], ys[i] = m.X, m.Y
			p.Stale = p.Stale || m.Stale
		}
		ex, ey := MeanCI(xs, ReplicateConfidence), MeanCI(ys, ReplicateConfidence)
		p.X, p.Y = ex.Mean, ey.Mean
		p.CI = &PointCI{XLo: ex.Lo, XHi: ex.Hi, YLo: ey.Lo, YHi: ey.Hi}
		out = append(out, p)
	}
	return out, nil
}

// andWhere adds a condition to a WHERE clause (or starts one).
func andWhere(where, cond string) string {
	if where == "" {
		return " WHERE " + cond
	}
	return where + " AND " + cond
}

// markFront sorts points best-first on x (then y, then id) and sets OnFront
// on the eligible points that no other eligible point dominates (at least
// as good on both axes, strictly better on one). Equal points are all on
// the front. One pass after the sort: a point is dominated exactly when a
// point with strictly better x has y at least as good, or a point with the
// same x has strictly better y.
func markFront(pts []Point, xd, yd Direction, includeStale bool) {
	order := func(d Direction, a, b float64) int {
		if d == Maximize {
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(pts, func(a, b Point) int {
		return cmp.Or(order(xd, a.X, b.X), order(yd, a.Y, b.Y), cmp.Compare(a.ID, b.ID))
	})
	var haveBest, haveGroup bool
	var bestY, groupX, groupY float64 // groupY: the first (best) y of the current equal-x group
	for i := range pts {
		p := &pts[i]
		if p.Stale && !includeStale {
			continue
		}
		if !haveGroup || p.X != groupX {
			// A new x group: the previous group now has strictly better x.
			if haveGroup && (!haveBest || yd.Better(groupY, bestY)) {
				bestY, haveBest = groupY, true
			}
			groupX, groupY, haveGroup = p.X, p.Y, true
		}
		dominatedByBetterX := haveBest && !yd.Better(p.Y, bestY)
		dominatedInGroup := yd.Better(groupY, p.Y)
		p.OnFront = !dominatedByBetterX && !dominatedInGroup
	}
}
