package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/autoinfer/autoinfer/ledger"
)

// headlineMetrics are the metric deltas a comparison shows under its
// intervals; the rest are in the trials table.
func headlineMetrics() []string {
	return []string{
		"output_throughput", "request_throughput", "request_goodput",
		"p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms", "p99_e2el_ms",
		"prefix_cache_hit_rate", "completed", "failed",
	}
}

// ErrNotInReport is wrapped by Build's error for a requested comparison of
// a trial that is not an ok row of the report.
var ErrNotInReport = errors.New("not an ok row of this report")

// pairsFor lists the comparisons to compute: the requested pairs (each id
// must be an ok row of the report), or every pair of ok rows when there
// are at most maxPairs, with a note otherwise.
func pairsFor(rows []Row, requested [][2]int64, maxPairs int) ([][2]int64, string, error) {
	ok := map[int64]bool{}
	var ids []int64
	for _, r := range rows {
		if r.Status == string(ledger.StatusOK) {
			ok[r.ID] = true
			ids = append(ids, r.ID)
		}
	}
	if len(requested) > 0 {
		for i, p := range requested {
			for _, id := range p {
				if !ok[id] {
					return nil, "", fmt.Errorf("compare[%d]: trial %d is %w", i, id, ErrNotInReport)
				}
			}
		}
		return requested, "", nil
	}
	n := len(ids) * (len(ids) - 1) / 2
	switch {
	case len(ids) < 2:
		return nil, "Fewer than two ok trials: nothing to compare.", nil
	case n > maxPairs:
		return nil, fmt.Sprintf("%d ok trials make %d pairs, more than the %d compared by default: choose pairs with --compare A,B.",
			len(ids), n, maxPairs), nil
	}
	var out [][2]int64
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			out = append(out, [2]int64{a, b})
		}
	}
	return out, "", nil
}

// comparePairs runs ledger.Compare (metric deltas, and bootstrap intervals
// on TTFT/TPOT p50/p99 from the requests) for each pair.
func comparePairs(ctx context.Context, src Source, pairs [][2]int64, opt ledger.CompareOptions) ([]Pair, error) {
	out := make([]Pair, 0, len(pairs))
	headline := headlineMetrics()
	for _, p := range pairs {
		c, err := src.Compare(ctx, strconv.FormatInt(p[0], 10), strconv.FormatInt(p[1], 10), opt)
		if err != nil {
			return nil, fmt.Errorf("comparing trials %d and %d: %w", p[0], p[1], err)
		}
		pair := Pair{A: p[0], B: p[1], NA: c.A.Requests, NB: c.B.Requests, Intervals: latencyIntervals(c.Intervals), Controls: c.Controls}
		for _, d := range c.Metrics {
			if slices.Contains(headline, d.Metric) {
				pair.Metrics = append(pair.Metrics, d)
			}
		}
		out = append(out, pair)
	}
	return out, nil
}
