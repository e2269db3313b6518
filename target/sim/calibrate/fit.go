package calibrate

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/autoinfer/autoinfer/target/sim"
)

// Coefficient is one fitted coefficient: its profile YAML name, value and
// standard error, in the field's unit.
type Coefficient struct {
	Name   string  `yaml:"name" json:"name"`
	Value  float64 `yaml:"value" json:"value"`
	StdErr float64 `yaml:"std_err" json:"std_err"`
}

// term is one regressor of the step time (in ms) and the profile field its
// coefficient sets.
type term struct {
	name string
	x    func(p *sim.Profile, b *sim.Batch) float64
	set  func(p *sim.Profile, v float64)
}

// terms are the coefficients fitted on base: a linear profile's five, or a
// calibrated profile's CPU overhead and GPU time scale (its linear terms,
// usually 0, stay as they are and are subtracted from each step first).
func terms(base *sim.Profile) []term {
	seqs := term{"cpu_us_per_seq", func(_ *sim.Profile, b *sim.Batch) float64 { return float64(b.Seqs()) / 1e3 },
		func(p *sim.Profile, v float64) { p.CPUUsPerSeq = v }}
	fixed := term{"step_base_ms", func(*sim.Profile, *sim.Batch) float64 { return 1 }, func(p *sim.Profile, v float64) { p.StepBaseMs = v }}
	if base.Model != nil {
		return []term{fixed, seqs, {"gpu_time_scale", func(p *sim.Profile, b *sim.Batch) float64 { return p.Model.StepMs(b) },
			func(p *sim.Profile, v float64) { p.GPUTimeScale = v }}}
	}
	return []term{fixed, seqs,
		{"prefill_us_per_token", func(_ *sim.Profile, b *sim.Batch) float64 { return float64(b.PrefillTokens()) / 1e3 },
			func(p *sim.Profile, v float64) { p.PrefillUsPerToken = v }},
		{"decode_us_per_seq", func(_ *sim.Profile, b *sim.Batch) float64 { return float64(b.DecodeSeqs) / 1e3 },
			func(p *sim.Profile, v float64) { p.DecodeUsPerSeq = v }},
		{"decode_ns_per_context_token", func(_ *sim.Profile, b *sim.Batch) float64 { return float64(b.DecodeContext) / 1e6 },
			func(p *sim.Profile, v float64) { p.DecodeNsPerContextToken = v }},
	}
}

// Fit is the least-squares fit of the step model to steps.
type Fit struct {
	Profile      sim.Profile
	Coefficients []Coefficient
	Steps        int
	// Dropped is how many outlying steps the final fit left out.
	Dropped int
	// ResidualMs is the residual standard deviation of a step, in ms.
	ResidualMs float64
}

// FitSteps fits base's step-model coefficients to the measured steps by
// least squares with every coefficient non-negative (nnls: each is a cost,
// and a cost the server does not have comes out 0 rather than as negative
// noise); the standard errors come from the residual variance and the
// whole design's (XᵀX)⁻¹, the unconstrained fit's, so a coefficient held
// at 0 still shows how well the probe pinned it. A design that does not
// identify every coefficient (too few steps, or a factor that never
// varied) is an error naming them.
//
// Steps a live host delayed (a stall, a late wake-up and the catch-up
// step after it) are outliers of the model, not data: after a first fit,
// steps whose residual exceeds four robust standard deviations (1.4826 ×
// the median absolute residual) are dropped and the fit repeated once;
// Fit.Dropped counts them.
func FitSteps(base sim.Profile, steps []Step) (*Fit, error) {
	f, res, err := fitNNLS(base, steps)
	if err != nil {
		return nil, err
	}
	abs := make([]float64, len(res))
	for i, r := range res {
		abs[i] = math.Abs(r)
	}
	cut := 4 * 1.4826 * quantile(abs, 0.5)
	kept := make([]Step, 0, len(steps))
	for i, r := range res {
		if math.Abs(r) <= cut {
			kept = append(kept, steps[i])
		}
	}
	if len(kept) == len(steps) || cut == 0 {
		return f, nil
	}
	// Without the outliers the design may no longer separate the
	// coefficients: the first fit then stands.
	if f2, _, err := fitNNLS(base, kept); err == nil {
		f2.Dropped = len(steps) - len(kept)
		return f2, nil
	}
	return f, nil
}

// fitNNLS is one non-negative least-squares fit; it also returns each
// step's residual in ms.
func fitNNLS(base sim.Profile, steps []Step) (*Fit, []float64, error) {
	ts := terms(&base)
	n, k := len(steps), len(ts)
	if n <= k {
		return nil, nil, fmt.Errorf("%d steps observed, need more than %d to fit %d coefficients", n, k, k)
	}
	x := mat.NewDense(n, k, nil)
	y := mat.NewVecDense(n, nil)
	zero := base
	for _, t := range ts {
		t.set(&zero, 0)
	}
	for i := range steps {
		b := &steps[i].Batch
		for j, t := range ts {
			x.Set(i, j, t.x(&base, b))
		}
		// What the coefficients do not set (a calibrated profile's linear
		// terms) is taken off the step first.
		rest := float64(zero.BatchTime(b).Nanoseconds()) / 1e6
		y.SetVec(i, float64(steps[i].Duration.Nanoseconds())/1e6-rest)
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	var inv mat.Dense
	if err := inv.Inverse(&xtx); err != nil {
		return nil, nil, fmt.Errorf("the probe's steps do not separate the coefficients %v: %w", names(ts), err)
	}
	beta, err := nnls(x, y)
	if err != nil {
		return nil, nil, fmt.Errorf("fitting %v: %w", names(ts), err)
	}
	var fitted, res mat.VecDense
	fitted.MulVec(x, beta)
	res.SubVec(y, &fitted)
	sigma2 := mat.Dot(&res, &res) / float64(n-k)
	f := &Fit{Profile: base, Steps: n, ResidualMs: math.Sqrt(sigma2)}
	for j, t := range ts {
		v := beta.AtVec(j)
		f.Coefficients = append(f.Coefficients, Coefficient{Name: t.name, Value: v, StdErr: math.Sqrt(sigma2 * inv.At(j, j))})
		t.set(&f.Profile, v)
	}
	return f, res.RawVector().Data, nil
}

func names(ts []term) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}
