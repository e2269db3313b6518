package arrival

import (
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Arrival kinds.
const (
	Gamma      = "gamma"       // gaps ~ Gamma(shape=burstiness, scale=1/(rate·burstiness)); burstiness 1 is Poisson
	Poisson    = "poisson"     // Gamma with burstiness forced to 1
	Constant   = "constant"    // evenly spaced at the rate
	Inf        = "inf"         // everything at offset 0
	ClosedLoop = "closed_loop" // max_concurrency requests in flight, the next sent when one finishes
	// Sweep is not one schedule but a series of runs (driver/sweep): a
	// synchronous run, a max-throughput run, then Rates constant rates
	// between the two, as guidellm's sweep profile.
	Sweep = "sweep"
)

// The labels of a sweep's first two runs: one request at a time, then
// everything at once (the constant-rate runs are labelled by their rate).
const (
	SweepSynchronous = "synchronous"
	SweepThroughput  = "throughput"
)

// Ramp-up strategies (vllm bench serve's --ramp-up-strategy).
const (
	RampLinear      = "linear"      // rate grows linearly from start to end rps over the requests
	RampExponential = "exponential" // rate grows geometrically from start to end rps
)

// DefaultSweepRates is the number of rates a sweep measures between its
// synchronous and its max-throughput run when Rates is 0.
const DefaultSweepRates = 5

// Arrival describes when requests are due. The zero value sends everything
// at once (rate inf), as vllm bench serve does by default.
type Arrival struct {
	// Kind is gamma, poisson, constant, inf, closed_loop or sweep. Empty
	// means gamma when RequestRate is finite and positive or a ramp-up is
	// set, else inf.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
	// RequestRate is requests per second; 0 or +Inf means inf.
	RequestRate float64 `yaml:"request_rate,omitempty" json:"request_rate,omitempty"`
	// Burstiness is the gamma shape; 0 means 1 (Poisson). Below 1 is
	// burstier than Poisson, above 1 more regular.
	Burstiness float64 `yaml:"burstiness,omitempty" json:"burstiness,omitempty"`
	// MaxConcurrency caps requests in flight for every kind (0 = no cap);
	// for closed_loop it is the concurrency.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`

	// RampUpStrategy (linear or exponential) replaces the fixed rate by one
	// that grows from RampUpStartRPS at the first request to RampUpEndRPS at
	// the last, as vllm bench serve's ramp-up does.
	RampUpStrategy string  `yaml:"ramp_up_strategy,omitempty" json:"ramp_up_strategy,omitempty"`
	RampUpStartRPS float64 `yaml:"ramp_up_start_rps,omitempty" json:"ramp_up_start_rps,omitempty"`
	RampUpEndRPS   float64 `yaml:"ramp_up_end_rps,omitempty" json:"ramp_up_end_rps,omitempty"`

	// Rates is the number of rates a sweep measures between its synchronous
	// and max-throughput runs (0 = DefaultSweepRates).
	Rates int `yaml:"rates,omitempty" json:"rates,omitempty"`
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
		if math.IsInf(a.RequestRate, 1) && a.RampUpStrategy == "" {
			a.Kind = Inf
		}
	}
	if a.Kind == Inf || a.Kind == ClosedLoop {
		a.RequestRate = math.Inf(1)
	}
	if a.Kind == Sweep && a.Rates == 0 {
		a.Rates = DefaultSweepRates
	}
	return a
}

// Validate checks every field and returns all problems joined, each a
// *field.Error naming the field by its yaml key.
func (a Arrival) Validate() error {
	var l field.Errors
	switch a.Kind {
	case "", Gamma, Poisson, Constant, Inf, ClosedLoop, Sweep:
	default:
		l.Add("kind", "unknown arrival kind %q (want gamma, poisson, constant, inf, closed_loop or sweep)", a.Kind)
	}
	if math.IsNaN(a.RequestRate) || a.RequestRate < 0 {
		l.Add("request_rate", "must be > 0 or inf, got %v", a.RequestRate)
	}
	if math.IsNaN(a.Burstiness) || a.Burstiness < 0 || math.IsInf(a.Burstiness, 0) {
		l.Add("burstiness", "must be a finite number > 0, got %v", a.Burstiness)
	}
	if a.MaxConcurrency < 0 {
		l.Add("max_concurrency", "must be >= 0, got %d", a.MaxConcurrency)
	}
	if a.Rates < 0 || (a.Rates > 0 && a.Kind != Sweep) {
		l.Add("rates", "must be >= 1 and only with kind sweep, got %d (kind %q)", a.Rates, a.Kind)
	}
	a.validateRamp(&l)
	if err := l.Err(); err != nil {
		return err // the checks below assume the fields above are sane
	}
	n := a.Normalized()
	if (n.Kind == Gamma || n.Kind == Poisson || n.Kind == Constant) && math.IsInf(n.RequestRate, 1) && n.RampUpStrategy == "" {
		l.Add("request_rate", "kind %s needs a finite rate", n.Kind)
	}
	if n.Kind == ClosedLoop && a.MaxConcurrency == 0 {
		l.Add("max_concurrency", "kind closed_loop needs the concurrency (> 0)")
	}
	if n.Kind == Sweep && a.RequestRate != 0 {
		l.Add("request_rate", "kind sweep finds its own rates; remove request_rate (got %v)", a.RequestRate)
	}
	return l.Err()
}

func (a Arrival) validateRamp(l *field.Errors) {
	if a.RampUpStrategy == "" {
		if a.RampUpStartRPS != 0 || a.RampUpEndRPS != 0 {
			l.Add("ramp_up_strategy", "required with ramp_up_start_rps / ramp_up_end_rps (linear or exponential)")
		}
		return
	}
	if a.RampUpStrategy != RampLinear && a.RampUpStrategy != RampExponential {
		l.Add("ramp_up_strategy", "want linear or exponential, got %q", a.RampUpStrategy)
	}
	switch a.Kind {
	case "", Gamma, Poisson, Constant:
	default:
		l.Add("ramp_up_strategy", "applies to kinds gamma, poisson and constant, not %s", a.Kind)
	}
	if a.RequestRate != 0 {
		l.Add("request_rate", "a ramp-up sets the rate; remove request_rate (got %v)", a.RequestRate)
	}
	lowest := 0.0
	if a.RampUpStrategy == RampExponential {
		lowest = math.SmallestNonzeroFloat64 // a geometric ramp cannot start at 0
	}
	if !(a.RampUpStartRPS >= lowest) || math.IsInf(a.RampUpStartRPS, 0) {
		l.Add("ramp_up_start_rps", "must be a finite rate >= 0 (> 0 for exponential), got %v", a.RampUpStartRPS)
	}
	if !(a.RampUpEndRPS > 0) || math.IsInf(a.RampUpEndRPS, 0) {
		l.Add("ramp_up_end_rps", "must be a finite rate > 0, got %v", a.RampUpEndRPS)
	}
}

// Offsets returns the intended send offsets of n requests, measured from the
// start of the run, drawn from r. a must be valid and not a sweep.
//
// Gamma offsets are the running sum of the gaps rescaled so the last request
// is due at exactly n/rate, as recent vllm bench serve versions do: the
// achieved rate then equals the configured one for every seed, while the
// shape of the gaps (their CV) is unchanged. Constant offsets are i/rate for
// i = 1…n, so the last is also due at n/rate. A ramp-up is not rescaled:
// request 0 is due at 0 and each gap is drawn at the rate of the request
// before it, as vllm bench serve's ramp-up does.
//
// newRand gives the generator; it is called once per pass over it (the
// rescaling needs the sum of all gaps first) and must give the same
// sequence each time.
func (a Arrival) Offsets(n int, newRand func() *rand.Rand) []time.Duration {
	return slices.Collect(a.OffsetSeq(n, newRand))
}

// OffsetSeq yields Offsets(n, newRand) one at a time in constant memory, so
// a long virtual run need not hold them.
func (a Arrival) OffsetSeq(n int, newRand func() *rand.Rand) iter.Seq[time.Duration] {
	a = a.Normalized()
	return func(yield func(time.Duration) bool) {
		switch {
		case a.RampUpStrategy != "":
			a.rampOffsets(n, newRand(), yield)
		case a.Kind == Inf, a.Kind == ClosedLoop, a.Kind == Sweep:
			for range n {
				if !yield(0) {
					return
				}
			}
		case a.Kind == Constant:
			for i := range n {
				if !yield(seconds(float64(i+1) / a.RequestRate)) {
					return
				}
			}
		default:
			r, total := newRand(), 0.0
			for range n {
				total += Gap(r, a.RequestRate, a.Burstiness)
			}
			scale := 1.0
			if total > 0 {
				scale = float64(n) / a.RequestRate / total
			}
			r, sum := newRand(), 0.0
			for range n {
				sum += Gap(r, a.RequestRate, a.Burstiness)
				if !yield(seconds(sum * scale)) {
					return
				}
			}
		}
	}
}

// RampRate is the rate of request i of n under the ramp-up.
func (a Arrival) RampRate(i, n int) float64 {
	progress := 0.0
	if n > 1 {
		progress = float64(i) / float64(n-1)
	}
	if a.RampUpStrategy == RampExponential {
		return a.RampUpStartRPS * math.Pow(a.RampUpEndRPS/a.RampUpStartRPS, progress)
	}
	return a.RampUpStartRPS + (a.RampUpEndRPS-a.RampUpStartRPS)*progress
}

func (a Arrival) rampOffsets(n int, r *rand.Rand, yield func(time.Duration) bool) {
	t := 0.0
	for i := range n {
		if !yield(seconds(t)) {
			return
		}
		rate := a.RampRate(i, n)
		switch {
		case rate <= 0:
			// A linear ramp from 0 sends its first request at once and
			// the next as soon as the rate is positive.
		case a.Kind == Constant:
			t += 1 / rate
		default:
			t += Gap(r, rate, a.Burstiness)
		}
	}
}

// Gap draws one inter-arrival gap in seconds: Gamma(shape=burstiness,
// scale=1/(rate·burstiness)), whose mean is 1/rate and CV 1/√burstiness.
func Gap(r *rand.Rand, rate, burstiness float64) float64 {
	return gammaSample(r, burstiness) / (rate * burstiness)
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
