package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/autoinfer/autoinfer/target/sim"
)

// bestSubset is the non-negative least-squares solution found the slow
// way: the best unconstrained fit over every subset of columns whose
// coefficients all come out non-negative (the optimum is one of them).
func bestSubset(t *testing.T, x *mat.Dense, y *mat.VecDense) *mat.VecDense {
	t.Helper()
	_, k := x.Dims()
	var best *mat.VecDense
	bestRSS := math.Inf(1)
	for set := range 1 << k {
		free := make([]bool, k)
		for i := range k {
			free[i] = set&(1<<i) != 0
		}
		s, err := solveFree(x, y, free)
		if err != nil {
			t.Fatal(err)
		}
		if mat.Min(s) < 0 {
			continue
		}
		if rss := mat.Norm(residual(x, y, s), 2); rss < bestRSS {
			best, bestRSS = s, rss
		}
	}
	return best
}

func residual(x *mat.Dense, y, beta *mat.VecDense) *mat.VecDense {
	var r mat.VecDense
	r.MulVec(x, beta)
	r.SubVec(y, &r)
	return &r
}

// The active-set solver finds the same optimum as trying every subset of
// coefficients, on designs whose truth has zero, small and negative
// coefficients (which the constraint must hold at 0) under noise.
func TestNNLSMatchesEverySubset(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	bound := 0
	for trial := range 200 {
		n, k := 30, 1+trial%5
		x := mat.NewDense(n, k, nil)
		for i := range n {
			for j := range k {
				x.Set(i, j, rng.Float64()*math.Pow(10, float64(-j))) // the step model's scales differ
			}
		}
		truth := mat.NewVecDense(k, nil)
		for j := range k {
			truth.SetVec(j, rng.NormFloat64())
		}
		y := mat.NewVecDense(n, nil)
		y.MulVec(x, truth)
		for i := range n {
			y.SetVec(i, y.AtVec(i)+0.05*rng.NormFloat64())
		}
		got, err := nnls(x, y)
		if err != nil {
			t.Fatal(err)
		}
		want := bestSubset(t, x, y)
		if mat.Min(got) < 0 {
			t.Fatalf("trial %d: a negative coefficient: %v", trial, mat.Formatted(got.T()))
		}
		if g, w := mat.Norm(residual(x, y, got), 2), mat.Norm(residual(x, y, want), 2); g > w*(1+1e-9) {
			t.Errorf("trial %d: residual %.12g, the best subset's %.12g\ngot  %v\nwant %v", trial, g, w,
				mat.Formatted(got.T()), mat.Formatted(want.T()))
		}
		for j := range k {
			if got.AtVec(j) == 0 {
				bound++
			}
		}
	}
	if bound == 0 {
		t.Fatal("no trial held a coefficient at 0: the constraint was never tested")
	}
	t.Logf("%d coefficients held at 0 over 200 trials", bound)
}

// A cost the server does not have (the fast profile's per-sequence CPU
// cost, 0) is fitted as 0, not as negative noise that no profile accepts:
// on noisy steps where the unconstrained fit goes negative, the fit holds
// it at 0, its profile runs, and the costs that exist are still recovered.
func TestFitHoldsAMissingCostAtZero(t *testing.T) {
	t.Parallel()
	truth, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	truth.CPUUsPerSeq = 0
	negative := 0
	for seed := range uint64(20) {
		steps := noisySteps(truth, seed)
		fit, err := FitSteps(truth, steps)
		if err != nil {
			t.Fatal(err)
		}
		if err := fit.Profile.Validate(); err != nil {
			t.Fatalf("seed %d: the fitted profile does not run: %v", seed, err)
		}
		c := fit.Coefficients[1]
		if c.Name != "cpu_us_per_seq" || c.Value < 0 || c.Value > 3*c.StdErr {
			t.Errorf("seed %d: %s fitted %.4g ± %.2g, truth 0", seed, c.Name, c.Value, c.StdErr)
		}
		if e := math.Abs(fit.Profile.StepBaseMs-truth.StepBaseMs) / truth.StepBaseMs; e > 0.05 {
			t.Errorf("seed %d: step_base_ms fitted %.4g, truth %.4g", seed, fit.Profile.StepBaseMs, truth.StepBaseMs)
		}
		if olsPerSeq(t, truth, steps) < 0 {
			negative++
			if c.Value != 0 {
				t.Errorf("seed %d: the unconstrained fit is negative, yet cpu_us_per_seq is %g", seed, c.Value)
			}
		}
	}
	if negative == 0 {
		t.Fatal("the unconstrained fit never went negative: the test does not exercise the constraint")
	}
	t.Logf("the unconstrained cpu_us_per_seq went negative for %d of 20 seeds; each was fitted 0", negative)
}

// noisySteps are 300 steps of varied batches timed by p, each up to
// ±0.1 ms off (seeded).
func noisySteps(p sim.Profile, seed uint64) []Step {
	rng := rand.New(rand.NewPCG(seed, 9))
	steps := make([]Step, 300)
	for i := range steps {
		b := sim.Batch{DecodeSeqs: 1 + rng.IntN(16)}
		b.DecodeContext = b.DecodeSeqs * (64 + rng.IntN(768))
		for range rng.IntN(4) {
			b.Chunks = append(b.Chunks, sim.Chunk{Tokens: 16 + rng.IntN(512)})
		}
		noise := time.Duration((rng.Float64()*2 - 1) * float64(100*time.Microsecond))
		steps[i] = Step{Duration: p.BatchTime(&b) + noise, Batch: b}
	}
	return steps
}

// olsPerSeq is the unconstrained least-squares cpu_us_per_seq of steps.
func olsPerSeq(t *testing.T, base sim.Profile, steps []Step) float64 {
	t.Helper()
	ts := terms(&base)
	x := mat.NewDense(len(steps), len(ts), nil)
	y := mat.NewVecDense(len(steps), nil)
	for i := range steps {
		for j, tm := range ts {
			x.Set(i, j, tm.x(&base, &steps[i].Batch))
		}
		y.SetVec(i, float64(steps[i].Duration.Nanoseconds())/1e6)
	}
	var beta mat.VecDense
	if err := beta.SolveVec(x, y); err != nil {
		t.Fatal(err)
	}
	return beta.AtVec(1)
}
