package calibrate

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// nnls is the least-squares solution of x·β ≈ y with every β ≥ 0, by
// Lawson and Hanson's active-set method (Solving Least Squares Problems,
// 1974, chapter 23): coefficients held at 0 are freed one at a time, the
// one whose gradient most wants it to grow, and the unconstrained
// least-squares solution over the free ones is taken, or, when it would
// turn a free coefficient negative, approached only as far as the first
// one reaches 0 (which is then held again). The step model's coefficients
// are costs, so a cost the server does not have is fitted as 0, not as
// noise of either sign; where every coefficient comes out positive this
// is the ordinary least-squares fit. x must have full column rank.
func nnls(x *mat.Dense, y *mat.VecDense) (*mat.VecDense, error) {
	_, k := x.Dims()
	beta := mat.NewVecDense(k, nil)
	free, skip := make([]bool, k), make([]bool, k)
	// A gradient below tol is rounding: a fit that is optimal within it is
	// optimal.
	tol := 1e-10 * mat.Norm(x, 2) * mat.Norm(y, 2)
	if tol == 0 {
		return beta, nil
	}
	// Each round frees one coefficient and each inner step holds at least
	// one again, so the loop ends; the bound only guards against rounding
	// cycling it.
	for range 3 * k * k {
		w := gradient(x, y, beta)
		j := -1
		for i := range k {
			if !free[i] && !skip[i] && w.AtVec(i) > tol && (j < 0 || w.AtVec(i) > w.AtVec(j)) {
				j = i
			}
		}
		if j < 0 {
			return beta, nil
		}
		free[j] = true
		s, err := solveFree(x, y, free)
		if err != nil {
			return nil, err
		}
		if s.AtVec(j) <= 0 {
			// Rounding: freeing j does not lower the residual after all;
			// try the others (Lawson and Hanson's step 6).
			free[j], skip[j] = false, true
			continue
		}
		if err := stepToFeasible(x, y, beta, s, free); err != nil {
			return nil, err
		}
		clear(skip)
	}
	return nil, errors.New("non-negative least squares did not converge")
}

// stepToFeasible moves beta to the free-set solution s, or, while s has a
// non-positive coefficient, as far toward it as keeps beta non-negative,
// holds the coefficients that reach 0, and solves again.
func stepToFeasible(x *mat.Dense, y, beta, s *mat.VecDense, free []bool) error {
	for {
		alpha, q := 1.0, -1
		for i, f := range free {
			if f && s.AtVec(i) <= 0 {
				if a := beta.AtVec(i) / (beta.AtVec(i) - s.AtVec(i)); a < alpha || q < 0 {
					alpha, q = a, i
				}
			}
		}
		if q < 0 {
			beta.CopyVec(s)
			return nil
		}
		for i, f := range free {
			if f {
				beta.SetVec(i, beta.AtVec(i)+alpha*(s.AtVec(i)-beta.AtVec(i)))
			}
		}
		beta.SetVec(q, 0)
		for i, f := range free {
			if f && beta.AtVec(i) <= 0 {
				free[i] = false
				beta.SetVec(i, 0)
			}
		}
		var err error
		if s, err = solveFree(x, y, free); err != nil {
			return err
		}
	}
}

// gradient is xᵀ(y − x·beta): how much each coefficient would lower the
// squared residual by growing.
func gradient(x *mat.Dense, y, beta *mat.VecDense) *mat.VecDense {
	var r, w mat.VecDense
	r.MulVec(x, beta)
	r.SubVec(y, &r)
	w.MulVec(x.T(), &r)
	return &w
}

// solveFree is the unconstrained least-squares solution over the free
// columns of x, 0 for the others.
func solveFree(x *mat.Dense, y *mat.VecDense, free []bool) (*mat.VecDense, error) {
	n, k := x.Dims()
	var cols []int
	for i, f := range free {
		if f {
			cols = append(cols, i)
		}
	}
	out := mat.NewVecDense(k, nil)
	if len(cols) == 0 {
		return out, nil
	}
	sub := mat.NewDense(n, len(cols), nil)
	for c, i := range cols {
		for r := range n {
			sub.Set(r, c, x.At(r, i))
		}
	}
	var s mat.VecDense
	if err := s.SolveVec(sub, y); err != nil {
		return nil, fmt.Errorf("least squares over %d of %d coefficients: %w", len(cols), k, err)
	}
	for c, i := range cols {
		v := s.AtVec(c)
		if math.IsNaN(v) {
			return nil, fmt.Errorf("least squares over %d of %d coefficients: NaN", len(cols), k)
		}
		out.SetVec(i, v)
	}
	return out, nil
}
