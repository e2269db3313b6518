package report

import (
	"errors"
	"fmt"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
)

// Defaults of Options.
const (
	DefaultAttainment = 0.9
	DefaultCDFPoints  = 400
	// DefaultMaxPairs bounds the comparisons computed when Options.Pairs is
	// empty: every pair of up to 12 ok trials. Each pair is a bootstrap over
	// both trials' requests, so a ledger-wide report would otherwise cost
	// quadratic time for a section a reader uses for one pair.
	DefaultMaxPairs = 66
	DefaultLimit    = 200
)

// Options tune Build. The zero value takes the defaults.
type Options struct {
	// Title heads the page; empty means one derived from the selection.
	Title string
	// Ledger is the ledger file's path as the page shows it.
	Ledger string
	// Generated is the time the page says it was made; zero leaves it out.
	Generated time.Time

	// SLO defines goodput for the sweep curves and the knee. Unset, the
	// SLO every selected ok row recorded from its spec is used; when the
	// rows recorded none, or different ones, the page says which and marks
	// no knee.
	SLO metrics.SLO
	// SLOSource says where SLO came from, for the page ("--goodput", "spec").
	SLOSource string
	// Attainment is the share of a trial's requests that must meet every
	// SLO bound for its rate to count as meeting the SLOs (default 0.9).
	Attainment float64

	// Pairs are the trial id pairs to compare (A, B). Empty means every
	// pair of the report's ok trials when there are at most MaxPairs.
	Pairs    [][2]int64
	MaxPairs int
	Compare  ledger.CompareOptions

	// CDFPoints caps the points drawn per distribution (default 400): a
	// larger sample is drawn at evenly spaced ranks, first and last kept.
	CDFPoints int
}

func (o Options) withDefaults() Options {
	if o.Attainment == 0 {
		o.Attainment = DefaultAttainment
	}
	if o.CDFPoints == 0 {
		o.CDFPoints = DefaultCDFPoints
	}
	if o.MaxPairs == 0 {
		o.MaxPairs = DefaultMaxPairs
	}
	if o.Compare.Resamples == 0 {
		o.Compare.Resamples = 2000
	}
	if o.Compare.Confidence == 0 {
		o.Compare.Confidence = 0.95
	}
	if o.Compare.Seed == 0 {
		o.Compare.Seed = 1
	}
	return o
}

// Validate checks every field and reports all problems, each naming the
// option by its flag name.
func (o Options) Validate() error {
	var errs []error
	if o.Attainment < 0 || o.Attainment > 1 {
		errs = append(errs, fmt.Errorf("attainment: must be in (0, 1], got %g", o.Attainment))
	}
	for _, b := range []struct {
		name string
		v    float64
	}{{"ttft", o.SLO.TTFTMs}, {"tpot", o.SLO.TPOTMs}, {"e2el", o.SLO.E2ELMs}} {
		if b.v < 0 {
			errs = append(errs, fmt.Errorf("goodput: %s bound must be >= 0 ms, got %g", b.name, b.v))
		}
	}
	if o.CDFPoints < 0 || o.CDFPoints == 1 {
		errs = append(errs, fmt.Errorf("cdf-points: must be 0 (default) or >= 2, got %d", o.CDFPoints))
	}
	if o.MaxPairs < 0 {
		errs = append(errs, fmt.Errorf("max-pairs: must be >= 0, got %d", o.MaxPairs))
	}
	for i, p := range o.Pairs {
		if p[0] <= 0 || p[1] <= 0 || p[0] == p[1] {
			errs = append(errs, fmt.Errorf("compare[%d]: want two different trial ids, got %d,%d", i, p[0], p[1]))
		}
	}
	if o.Compare.Resamples < 0 {
		errs = append(errs, fmt.Errorf("resamples: must be > 0, got %d", o.Compare.Resamples))
	}
	if c := o.Compare.Confidence; c < 0 || c >= 1 {
		errs = append(errs, fmt.Errorf("confidence: must be in (0, 1), got %g", c))
	}
	return errors.Join(errs...)
}
