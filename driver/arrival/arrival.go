package arrival

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival kinds.
const (
	Gamma      = "gamma"       // gaps ~ Gamma(shape=burstiness, scale=1/(rate·burstiness)); burstiness 1 is Poisson
	Poisson    = "poisson"     // Gamma with burstiness forced to 1
	Constant   = "constant"    // evenly spaced at the rate
	Inf        = "inf"         // everything at offset 0
	ClosedLoop = "closed_loop" // max_concurrency requests in flight, the next sent when one finishes
)

// Arrival describes when requests are due. The zero value sends everything
// at once (rate inf), as vllm bench serve does by default.
type Arrival struct {
	// Kind is gamma, poisson, constant, inf or closed_loop. Empty means gamma
	// when RequestRate is finite and positive, else inf.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
	// RequestRate is requests per second; 0 or +Inf means inf.
	RequestRate float64 `yaml:"request_rate,omitempty" json:"request_rate,omitempty"`
	// Burstiness is the gamma shape; 0 means 1 (Poisson). Below 1 is
	// burstier than Poisson, above 1 more regular.
	Burstiness float64 `yaml:"burstiness,omitempty" json:"burstiness,omitempty"`
	// MaxConcurrency caps requests in flight for every kind (0 = no cap);
	// for closed_loop it is the concurrency.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
}

// Normalized returns a with defaults filled in: the kind resolved,
// burstiness 1 when unset or poisson, rate +Inf for inf and closed_loop.
func (a Arrival) Normalized() Arrival {
	if a.RequestRate == 0 {
		a.RequestRate = math.Inf(1)
	}
	if a.Burstiness == 0 || a.Kind == Poisson {
		a.Burstiness = 1
	}
	if a.Kind == "" {
		a.Kind = Gamma
		if math.IsInf(a.RequestRate, 1) {
			a.Kind = Inf
		}
	}
	if a.Kind == Inf || a.Kind == ClosedLoop {
		a.RequestRate = math.Inf(1)
	}
	return a
}

// Validate reports the first bad field by its yaml key.
func (a Arrival) Validate() error {
	switch a.Kind {
	case "", Gamma, Poisson, Constant, Inf, ClosedLoop:
	default:
		return fmt.Errorf("kind: unknown arrival kind %q (want gamma, poisson, constant, inf or closed_loop)", a.Kind)
	}
	if math.IsNaN(a.RequestRate) || a.RequestRate < 0 {
		return fmt.Errorf("request_rate: must be > 0 or inf, got %v", a.RequestRate)
	}
	if math.IsNaN(a.Burstiness) || a.Burstiness < 0 || math.IsInf(a.Burstiness, 0) {
		return fmt.Errorf("burstiness: must be a finite number > 0, got %v", a.Burstiness)
	}
	if a.MaxConcurrency < 0 {
		return fmt.Errorf("max_concurrency: must be >= 0, got %d", a.MaxConcurrency)
	}
	n := a.Normalized()
	if (n.Kind == Gamma || n.Kind == Poisson || n.Kind == Constant) && math.IsInf(n.RequestRate, 1) {
		return fmt.Errorf("request_rate: kind %s needs a finite rate", n.Kind)
	}
	if n.Kind == ClosedLoop && a.MaxConcurrency == 0 {
		return fmt.Errorf("max_concurrency: kind closed_loop needs the concurrency (> 0)")
	}
	return nil
}

// Offsets returns the intended send offsets of n requests, measured from the
// start of the run, drawn from r. a must be valid.
//
// Gamma offsets are the running sum of the gaps rescaled so the last request
// is due at exactly n/rate, as recent vllm bench serve versions do: the
// achieved rate then equals the configured one for every seed, while the
// shape of the gaps (their CV) is unchanged. Constant offsets are i/rate for
// i = 1…n, so the last is also due at n/rate.
func (a Arrival) Offsets(n int, r *rand.Rand) []time.Duration {
	a = a.Normalized()
	out := make([]time.Duration, n)
	switch a.Kind {
	case Inf, ClosedLoop:
		return out
	case Constant:
		for i := range out {
			out[i] = seconds(float64(i+1) / a.RequestRate)
		}
		return out
	}
	sums := make([]float64, n)
	total := 0.0
	for i := range sums {
		total += Gap(r, a.RequestRate, a.Burstiness)
		sums[i] = total
	}
	scale := 1.0
	if total > 0 {
		scale = float64(n) / a.RequestRate / total
	}
	for i, s := range sums {
		out[i] = seconds(s * scale)
	}
	return out
}

// Gap draws one inter-arrival gap in seconds: Gamma(shape=burstiness,
// scale=1/(rate·burstiness)), whose mean is 1/rate and CV 1/√burstiness.
func Gap(r *rand.Rand, rate, burstiness float64) float64 {
	return gammaSample(r, burstiness) / (rate * burstiness)
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
