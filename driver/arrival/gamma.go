package arrival

import (
	"math"
	"math/rand/v2"
)

// gammaSample draws from Gamma(shape k, scale 1) with Marsaglia and Tsang's
// squeeze method (2000); shapes below 1 use the boost
// Gamma(k) = Gamma(k+1)·U^(1/k). math/rand/v2 has no gamma source and the
// method needs a few lines, so no dependency is pulled in for it.
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gammaSample(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
