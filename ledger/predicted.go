package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// PredictionTolerance is how far a measurement may be from its prediction,
// as a share of the prediction, and still agree with it (issue 20: 5 %).
const PredictionTolerance = 0.05

// PredictionMetrics are the metrics a prediction is checked on: throughput,
// goodput, and TTFT, TPOT and E2E latency at p50 and p99.
func PredictionMetrics() []string {
	return []string{"request_throughput", "output_throughput", "request_goodput",
		"p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms", "p50_e2el_ms", "p99_e2el_ms"}
}

// Prediction is a real-time row and the virtual row that predicted it.
type Prediction struct {
	Predicted Trial `json:"predicted"`
	Measured  Trial `json:"measured"`
}

// MetricError is one metric of a pair: the prediction, the measurement and
// their ratio measured/predicted (nil when the prediction is 0 and the
// measurement is not; 1 when both are 0).
type MetricError struct {
	Metric    string   `json:"metric"`
	Predicted float64  `json:"predicted"`
	Measured  float64  `json:"measured"`
	Ratio     *float64 `json:"ratio"`
	// Within says |ratio − 1| ≤ PredictionTolerance.
	Within bool `json:"within"`
}

// Compare returns a metric's error; ok is false when either row lacks it.
func (p Prediction) Compare(metric string) (MetricError, bool) {
	pv, ok1 := p.Predicted.Values()[metric]
	mv, ok2 := p.Measured.Values()[metric]
	if !ok1 || !ok2 {
		return MetricError{Metric: metric}, false
	}
	return NewMetricError(metric, pv, mv), true
}

// NewMetricError compares a predicted and a measured value.
func NewMetricError(metric string, predicted, measured float64) MetricError {
	e := MetricError{Metric: metric, Predicted: predicted, Measured: measured}
	var r float64
	switch {
	case predicted == 0 && measured == 0:
		r = 1
	case predicted == 0:
		return e
	default:
		r = measured / predicted
	}
	e.Ratio = &r
	e.Within = math.Abs(r-1) <= PredictionTolerance+1e-12
	return e
}

// Errors are the pair's PredictionMetrics, then extra metrics (e.g. a
// search objective), each once.
func (p Prediction) Errors(extra ...string) []MetricError {
	var out []MetricError
	seen := map[string]bool{}
	for _, m := range append(PredictionMetrics(), extra...) {
		if seen[m] {
			continue
		}
		seen[m] = true
		if e, ok := p.Compare(m); ok {
			out = append(out, e)
		}
	}
	return out
}

// Refused says why the measurement does not count: it did not run ok (a
// host the check refused, a failed check, an interruption). Empty when it
// counts.
func (p Prediction) Refused() string {
	t := p.Measured
	if t.Status == StatusOK {
		return ""
	}
	if t.Failure != nil {
		return fmt.Sprintf("%s %s: %v", t.Status, t.Failure.Kind(), t.Failure)
	}
	return string(t.Status)
}

// Agrees reports whether the measurement counts and every metric of errs
// is within the tolerance.
func (p Prediction) Agrees(errs []MetricError) bool {
	if p.Refused() != "" || len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if !e.Within {
			return false
		}
	}
	return true
}

// Predictions returns the real-time rows f selects that confirm a virtual
// prediction, newest first, each with its virtual row. The filter applies
// to the measured rows; stale and failed ones are kept unless f says
// otherwise (a refused confirmation is a finding too).
func (l *Ledger) Predictions(ctx context.Context, f Filter) ([]Prediction, error) {
	f.Predicted = true
	measured, err := l.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Prediction, 0, len(measured))
	for _, m := range measured {
		v, err := l.Get(ctx, *m.PredictedBy)
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("trial %d: predicted_by %d: %w", m.ID, *m.PredictedBy, err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Prediction{Predicted: v, Measured: m})
	}
	return out, nil
}
