package stepmodel

import (
	"errors"
	"fmt"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Table is a piecewise-linear function given at knots X (ascending) with
// values Y. Below the first knot it is constant; above the last it grows in
// proportion to x (linear layers are compute bound there and all-reduces
// bandwidth bound, both linear in size), which does not amplify the noise of
// the last measured rows as continuing the last segment would.
type Table struct {
	X, Y []float64
}

// Eval is the table's value at x.
func (t Table) Eval(x float64) float64 {
	n := len(t.X)
	if n == 0 {
		return 0
	}
	if x <= t.X[0] || n == 1 {
		return t.Y[0]
	}
	if x >= t.X[n-1] {
		return t.Y[n-1] * x / t.X[n-1]
	}
	i, found := slices.BinarySearch(t.X, x)
	if found {
		return t.Y[i]
	}
	x0, x1, y0, y1 := t.X[i-1], t.X[i], t.Y[i-1], t.Y[i]
	return y0 + (y1-y0)*(x-x0)/(x1-x0)
}

// Point is one measurement for a fit: value Y at X.
type Point struct{ X, Y float64 }

// FitTable fits a piecewise-linear function with the given knots to points,
// minimising the squared relative error, with a small penalty on the second
// difference of the knot values so that knots between sparse points stay on
// the curve. Every knot needs a point on each side within reach of the
// penalty; knots past the last point are an error.
func FitTable(points []Point, knots []float64, smooth float64) (Table, error) {
	m := len(knots)
	if m < 2 {
		return Table{}, errors.New("fitting a table: need at least 2 knots")
	}
	if !slices.IsSorted(knots) {
		return Table{}, errors.New("fitting a table: knots must ascend")
	}
	if len(points) < m {
		return Table{}, fmt.Errorf("fitting a table: %d points for %d knots", len(points), m)
	}
	a := mat.NewSymDense(m, nil)
	b := mat.NewVecDense(m, nil)
	add := func(i, j int, v float64) { a.SetSym(i, j, a.At(i, j)+v) }
	for _, p := range points {
		if p.Y <= 0 {
			return Table{}, fmt.Errorf("fitting a table: value %v at %v is not positive", p.Y, p.X)
		}
		w := 1 / (p.Y * p.Y)
		j, u := segment(knots, p.X)
		add(j, j, w*(1-u)*(1-u))
		b.SetVec(j, b.AtVec(j)+w*(1-u)*p.Y)
		if u > 0 {
			add(j, j+1, w*(1-u)*u)
			add(j+1, j+1, w*u*u)
			b.SetVec(j+1, b.AtVec(j+1)+w*u*p.Y)
		}
	}
	// Second-difference penalty, scaled to the weights' magnitude.
	scale := smooth * trace(a) / float64(m)
	for j := 1; j+1 < m; j++ {
		c := []float64{1, -2, 1}
		for r := range 3 {
			for s := r; s < 3; s++ {
				add(j-1+r, j-1+s, scale*c[r]*c[s])
			}
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return Table{}, errors.New("fitting a table: knots without enough points around them")
	}
	var y mat.VecDense
	if err := ch.SolveVecTo(&y, b); err != nil {
		return Table{}, fmt.Errorf("fitting a table: %w", err)
	}
	return Table{X: slices.Clone(knots), Y: slices.Clone(y.RawVector().Data)}, nil
}

// segment locates x between knots: index j and fraction u in [0, 1).
// Points outside the knots attach to the nearest end knot.
func segment(knots []float64, x float64) (int, float64) {
	n := len(knots)
	if x <= knots[0] {
		return 0, 0
	}
	if x >= knots[n-1] {
		return n - 2, 1
	}
	i, found := slices.BinarySearch(knots, x)
	if found {
		if i == n-1 {
			return n - 2, 1
		}
		return i, 0
	}
	return i - 1, (x - knots[i-1]) / (knots[i] - knots[i-1])
}

func trace(a *mat.SymDense) float64 {
	t := 0.0
	for i := range a.SymmetricDim() {
		t += a.At(i, i)
	}
	return t
}
