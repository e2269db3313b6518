package ledger

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// DriftRecent is how many of a profile's most recent confirmed predictions
// the drift check takes the median error of.
const DriftRecent = 5

// Drift is one profile's prediction error over time: every pair whose
// prediction ran on it, in the order the measurements finished, and the
// metrics whose median error over the DriftRecent most recent pairs
// exceeds the bound the profile states.
type Drift struct {
	// Profile is the profile's content hash ("" when the predicted rows do
	// not record one); Name its name.
	Profile string `json:"profile"`
	Name    string `json:"name"`
	// Bounds are the stated error per metric (from the profile's stated
	// held-out errors; PredictionTolerance where it states none).
	Bounds map[string]float64 `json:"bounds"`
	// Errors are |measured/predicted − 1| per metric, one per pair in time
	// order.
	Rows   []int64              `json:"measured_rows"`
	Errors map[string][]float64 `json:"errors"`
	// Points are the same errors pair by pair, in time order: what the
	// HTML report draws as the error over time.
	Points []DriftPoint `json:"points"`
	// Recent is the median error of the recent pairs per metric.
	Recent map[string]float64 `json:"recent_median"`
	// Exceeded names the metrics whose recent median exceeds its bound.
	Exceeded []string `json:"exceeded"`
}

// DriftPoint is one pair of a profile's drift: the measured row, when it
// finished, and |measured/predicted − 1| per metric (a metric without a
// ratio is absent).
type DriftPoint struct {
	Row        int64              `json:"measured_row"`
	FinishedAt time.Time          `json:"finished_at"`
	Errors     map[string]float64 `json:"errors"`
}

// Drifts groups ps by the predicted row's profile and computes each
// profile's drift; pairs a refused prediction are left out.
func Drifts(ps []Prediction) []Drift {
	byProfile := map[string]*Drift{}
	var order []string
	sorted := slices.Clone(ps)
	slices.SortStableFunc(sorted, func(a, b Prediction) int { return a.Measured.FinishedAt.Compare(b.Measured.FinishedAt) })
	for _, p := range sorted {
		if p.Refused() != "" {
			continue
		}
		var prof struct {
			Hash       string `json:"content_hash"`
			Provenance string `json:"provenance"`
		}
		_ = json.Unmarshal(p.Predicted.HardwareConfig, &prof) // absent or foreign: one group for all
		d, ok := byProfile[prof.Hash]
		if !ok {
			d = &Drift{Profile: prof.Hash, Name: p.Predicted.Hardware, Bounds: statedBounds(prof.Provenance), Errors: map[string][]float64{}}
			byProfile[prof.Hash] = d
			order = append(order, prof.Hash)
		}
		d.Rows = append(d.Rows, p.Measured.ID)
		pt := DriftPoint{Row: p.Measured.ID, FinishedAt: p.Measured.FinishedAt, Errors: map[string]float64{}}
		for _, e := range p.Errors() {
			if e.Ratio != nil {
				d.Errors[e.Metric] = append(d.Errors[e.Metric], math.Abs(*e.Ratio-1))
				pt.Errors[e.Metric] = math.Abs(*e.Ratio - 1)
			}
		}
		d.Points = append(d.Points, pt)
	}
	out := make([]Drift, 0, len(order))
	for _, h := range order {
		d := byProfile[h]
		d.Recent = map[string]float64{}
		for _, m := range PredictionMetrics() {
			errs := d.Errors[m]
			if len(errs) == 0 {
				continue
			}
			d.Recent[m] = median(errs[max(0, len(errs)-DriftRecent):])
			if d.Recent[m] > d.Bound(m)+1e-12 {
				d.Exceeded = append(d.Exceeded, m)
			}
		}
		out = append(out, *d)
	}
	return out
}

// Bound is the error profile d states for metric m.
func (d *Drift) Bound(m string) float64 {
	if b, ok := d.Bounds[m]; ok {
		return b
	}
	return PredictionTolerance
}

// calibrationMetrics maps a calibrated profile's held-out metric names to
// the ledger's.
var calibrationMetrics = map[string]string{
	"throughput": "output_throughput", "ttft_p50": "p50_ttft_ms", "ttft_p99": "p99_ttft_ms",
	"tpot_p50": "p50_tpot_ms", "tpot_p99": "p99_tpot_ms", "e2e_p50": "p50_e2el_ms",
}

var statedError = regexp.MustCompile(`\b(throughput|ttft_p50|ttft_p99|tpot_p50|tpot_p99|e2e_p50) ([0-9.]+) %`)

// statedBounds reads the held-out error a calibrated profile states in its
// provenance ("… held-out error: tpot_p50 2.1 %, …"), never below
// PredictionTolerance: a fit's held-out error is measured on few groups.
func statedBounds(provenance string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range statedError.FindAllStringSubmatch(provenance, -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			out[calibrationMetrics[m[1]]] = max(v/100, PredictionTolerance)
		}
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
