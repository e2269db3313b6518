package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// Overhead is what the real HTTP path added to a trial's requests over the
// same trial on the virtual clock: per request, real minus virtual, for
// every request both runs completed. Both clocks send the same stream, so
// request i is the same bytes at the same intended time in each run.
type Overhead struct {
	Trial     string  `json:"trial"`
	RealRow   int64   `json:"real_row"`
	Virtual   int64   `json:"virtual_row"`
	Pairs     int     `json:"pairs"`
	TTFTP50Ms float64 `json:"ttft_diff_p50_ms"`
	TTFTP10Ms float64 `json:"ttft_diff_p10_ms"`
	TTFTP90Ms float64 `json:"ttft_diff_p90_ms"`
	E2EP50Ms  float64 `json:"e2el_diff_p50_ms"`
	TPOTP50Ms float64 `json:"tpot_diff_p50_ms"`
}

// MeasureOverhead runs t once in real time and once on the virtual clock
// without an HTTP overhead, both recorded by r's ledger (read back through
// rows), and returns the
// per-request differences: the median TTFT difference is the
// http_overhead_ms that makes the virtual clock's latencies the real
// path's. A real-time run that does not end ok (HostOverloaded on a busy
// host, failed checks) measures nothing and is an error naming its
// failure. The gate is off in both runs: it does not touch the measured
// requests.
func (r *Runner) MeasureOverhead(ctx context.Context, t trials.Trial, rows requestReader) (Overhead, error) {
	t.Gate.Reference = trials.ReferenceNone
	t.Assert, t.Baseline = nil, ""
	ts := []trials.Trial{t, t}
	if err := trials.SetClock(ts[:1], trials.ClockReal, "overhead"); err != nil {
		return Overhead{}, err
	}
	if err := trials.SetClock(ts[1:], trials.ClockVirtual, "overhead"); err != nil {
		return Overhead{}, err
	}
	if err := trials.SetHTTPOverhead(ts[1:], 0, "overhead"); err != nil {
		return Overhead{}, err
	}
	var ids [2]int64
	var recs [2][]ledger.Request
	for i, tt := range ts {
		out, err := r.Run(ctx, tt)
		if err != nil {
			return Overhead{}, err
		}
		if out.Status != ledger.StatusOK {
			return Overhead{}, fmt.Errorf("the %s run did not end ok (%s): %w", out.Clock, out.Status, errFailure(out))
		}
		ids[i] = out.RowID
		if recs[i], err = rows.Requests(ctx, out.RowID); err != nil {
			return Overhead{}, fmt.Errorf("reading requests of row %d: %w", out.RowID, err)
		}
	}
	o := Overhead{Trial: t.Name, RealRow: ids[0], Virtual: ids[1]}
	var ttft, e2e, tpot []float64
	virt := map[int]ledger.Request{}
	for _, q := range recs[1] {
		virt[q.Index] = q
	}
	for _, q := range recs[0] {
		v, ok := virt[q.Index]
		if !ok || q.Status != ledger.RequestOK || v.Status != ledger.RequestOK {
			continue
		}
		ttft, e2e = append(ttft, q.TTFTMs-v.TTFTMs), append(e2e, q.E2ELMs-v.E2ELMs)
		tpot = append(tpot, q.TPOTMs-v.TPOTMs)
	}
	if o.Pairs = len(ttft); o.Pairs == 0 {
		return o, errors.New("no request completed in both runs")
	}
	o.TTFTP50Ms, o.TTFTP10Ms, o.TTFTP90Ms = quantile(ttft, 0.5), quantile(ttft, 0.1), quantile(ttft, 0.9)
	o.E2EP50Ms, o.TPOTP50Ms = quantile(e2e, 0.5), quantile(tpot, 0.5)
	return o, nil
}

// requestReader is the part of the ledger MeasureOverhead reads back.
type requestReader interface {
	Requests(ctx context.Context, id int64) ([]ledger.Request, error)
}

// errFailure is an outcome's failure as an error.
func errFailure(out Outcome) error {
	if out.Failure == nil {
		return errors.New("no failure recorded")
	}
	return out.Failure
}

// quantile is the q-quantile of xs by nearest rank.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
