package sweep

import (
	"context"
	"fmt"
	"strconv"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/trials/field"
)

// DefaultAttainment is the share of requests that must meet every SLO for
// a rate to count as sustainable.
const DefaultAttainment = 0.9

// Run labels.
const (
	Synchronous = arrival.SweepSynchronous
	Throughput  = arrival.SweepThroughput
)

// Options configure a sweep.
type Options struct {
	// Rates is the number of constant rates between the synchronous and
	// throughput runs (0: arrival.DefaultSweepRates).
	Rates int
	// Attainment is the share of requests meeting every SLO a rate needs
	// (0: DefaultAttainment).
	Attainment float64
	// Kind is the arrival of the in-between runs: constant (default, as
	// guidellm), poisson or gamma.
	Kind string
	// Progress is called with each run's label before it starts and with
	// every finished request.
	Progress func(label string, p driver.Progress)
}

// Point is one run of a sweep.
type Point struct {
	Label string
	// Rate is the offered rate (0 for the synchronous and throughput runs,
	// whose rate is whatever the server sustained).
	Rate   float64
	Result *driver.Result
	// Attainment is the share of the run's requests that met every SLO.
	Attainment float64
	// Meets says whether Attainment reached the threshold.
	Meets bool
}

// Result is a finished sweep.
type Result struct {
	Points []Point
	// SyncRate and MaxRate are the request throughputs of the synchronous
	// and throughput runs; the rates lie between them.
	SyncRate, MaxRate float64
	// Knee is the index in Points of the highest constant rate that meets
	// the SLOs, -1 when none does.
	Knee int
}

// KneePoint returns the knee's point, or nil.
func (r *Result) KneePoint() *Point {
	if r.Knee < 0 {
		return nil
	}
	return &r.Points[r.Knee]
}

// Run sweeps cfg's workload over rates. cfg.Arrival's kind must be sweep
// or empty; its max_concurrency caps every run. cfg.Goodput must set at
// least one SLO (the knee is defined by it). The warm-up and ready check
// run once, before the synchronous run. When ctx ends, Run returns the
// points finished so far with ctx's error.
func Run(ctx context.Context, cfg driver.Config, opts Options) (*Result, error) {
	if err := check(cfg, &opts); err != nil {
		return nil, err
	}
	res := &Result{Knee: -1}
	run := func(label string, a arrival.Arrival, first bool) (*Point, error) {
		c := cfg
		c.Arrival = a
		c.RunID = cfg.RunID + "-" + label
		if cfg.RunID == "" {
			c.RunID = cfg.TrialID + "-" + label
		}
		c.Label = label
		if !first {
			c.WarmupRequests, c.ReadyCheckTimeout = -1, -1
		}
		var progress []driver.Option
		if opts.Progress != nil {
			opts.Progress(label, driver.Progress{})
			progress = append(progress, driver.WithProgress(func(p driver.Progress) { opts.Progress(label, p) }))
		}
		r, err := driver.Run(ctx, c, progress...)
		if r == nil {
			return nil, fmt.Errorf("sweep %s run: %w", label, err)
		}
		p := Point{Label: label, Rate: a.RequestRate, Result: r}
		p.Attainment = Attainment(r.Requests, cfg.Goodput)
		p.Meets = p.Attainment >= opts.Attainment
		res.Points = append(res.Points, p)
		if err != nil {
			return nil, fmt.Errorf("sweep %s run: %w", label, err)
		}
		return &res.Points[len(res.Points)-1], nil
	}
	capN := cfg.Arrival.MaxConcurrency
	sync, err := run(Synchronous, arrival.Arrival{Kind: arrival.ClosedLoop, MaxConcurrency: 1}, true)
	if err != nil {
		return res, err
	}
	res.SyncRate = sync.Result.Summary.RequestThroughput
	top, err := run(Throughput, arrival.Arrival{Kind: arrival.Inf, MaxConcurrency: capN}, false)
	if err != nil {
		return res, err
	}
	res.MaxRate = top.Result.Summary.RequestThroughput
	for i, rate := range Rates(res.SyncRate, res.MaxRate, opts.Rates) {
		a := arrival.Arrival{Kind: opts.Kind, RequestRate: rate, MaxConcurrency: capN, Burstiness: cfg.Arrival.Burstiness}
		if _, err := run("rate-"+strconv.Itoa(i+1), a, false); err != nil {
			return res, err
		}
	}
	res.Knee = Knee(res.Points)
	return res, nil
}

// Rates spaces n rates evenly strictly between lo and hi.
func Rates(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*float64(i+1)/float64(n+1)
	}
	return out
}

// Knee is the index of the highest-rate run (Rate > 0) that meets the
// SLOs, -1 when none does.
func Knee(points []Point) int {
	best := -1
	for i, p := range points {
		if p.Rate > 0 && p.Meets && (best < 0 || p.Rate > points[best].Rate) {
			best = i
		}
	}
	return best
}

// Attainment is the share of requests (failed ones included, not_sent and
// incomplete ones left out) that succeeded within every SLO.
func Attainment(recs []metrics.RequestRecord, slo metrics.SLO) float64 {
	t := Tally{SLO: slo}
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Attainment()
}

// Tally is Attainment counted one record at a time, for a run that does
// not hold its records.
type Tally struct {
	SLO     metrics.SLO
	n, good int
}

// Add counts r.
func (t *Tally) Add(r *metrics.RequestRecord) {
	if r.ErrorType == metrics.NotSent || r.ErrorType == metrics.Incomplete {
		return
	}
	t.n++
	if r.Success && metrics.Meets(r, t.SLO) {
		t.good++
	}
}

// Attainment is the share of the counted requests that met the SLO; 0
// without any.
func (t *Tally) Attainment() float64 {
	if t.n == 0 {
		return 0
	}
	return float64(t.good) / float64(t.n)
}

func check(cfg driver.Config, opts *Options) error {
	var l field.Errors
	if k := cfg.Arrival.Kind; k != "" && k != arrival.Sweep {
		l.Add("arrival.kind", "a sweep sets the arrival of each run; want sweep, got %q", k)
	}
	if cfg.Arrival.RequestRate != 0 || cfg.Arrival.RampUpStrategy != "" {
		l.Add("arrival.request_rate", "a sweep finds its own rates; remove request_rate and ramp-up")
	}
	if !cfg.Goodput.Set() {
		l.Add("goodput", "a sweep's knee is the highest rate meeting the SLOs; set at least one (ttft, tpot, e2el)")
	}
	if opts.Rates == 0 {
		opts.Rates = cfg.Arrival.Rates
	}
	if opts.Rates == 0 {
		opts.Rates = arrival.DefaultSweepRates
	}
	if opts.Rates < 1 {
		l.Add("arrival.rates", "must be >= 1, got %d", opts.Rates)
	}
	if opts.Attainment == 0 {
		opts.Attainment = DefaultAttainment
	}
	if !(opts.Attainment > 0 && opts.Attainment <= 1) {
		l.Add("knee_attainment", "must be in (0, 1], got %v", opts.Attainment)
	}
	switch opts.Kind {
	case "":
		opts.Kind = arrival.Constant
	case arrival.Constant, arrival.Poisson, arrival.Gamma:
	default:
		l.Add("arrival.kind", "the rates of a sweep run constant, poisson or gamma, not %q", opts.Kind)
	}
	return l.Err()
}
