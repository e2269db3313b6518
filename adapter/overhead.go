package adapter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// Overhead is what the real HTTP path added to a trial's requests over the
// same trial on the virtual clock (its engines late by the real run's
// median step lag): per request, real minus virtual, for
// every request both runs completed. Both clocks send the same stream, so
// request i is the same bytes at the same intended time in each run.
//
// On the sim target the engines run in this process, on the driver's
// clock, and report when each request reached them and when they emitted
// its first token: the real run's TTFT then splits into inbound (client
// send → queued at the engine), the engine's own time and outbound
// (emission → the client has the token).
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

	// Split counts the real run's requests whose engine timings were
	// seen (0: the workers report none; the split figures are then 0).
	Split         int     `json:"split_requests"`
	InboundP10Ms  float64 `json:"inbound_p10_ms"`
	InboundP50Ms  float64 `json:"inbound_p50_ms"`
	InboundP90Ms  float64 `json:"inbound_p90_ms"`
	OutboundP10Ms float64 `json:"outbound_p10_ms"`
	OutboundP50Ms float64 `json:"outbound_p50_ms"`
	OutboundP90Ms float64 `json:"outbound_p90_ms"`
	// EngineDiff* are, per request, the real engine's time from queueing
	// to the first token minus the virtual run's TTFT (the engine's time
	// there, the path costing nothing, the engine late by engine_lag_ms):
	// what the engine lost in real time beyond the modelled lag (timer
	// jitter, a step missed), which no constant models.
	EngineDiffP10Ms float64 `json:"engine_diff_p10_ms"`
	EngineDiffP50Ms float64 `json:"engine_diff_p50_ms"`
	EngineDiffP90Ms float64 `json:"engine_diff_p90_ms"`

	// Steps counts the real run's engine steps completed in the measured
	// phase; StepLag* are their lags (completion − planned end: the
	// loop's timer and goroutine wake-up), 0 when Steps is 0.
	Steps        int     `json:"steps"`
	StepLagP10Ms float64 `json:"step_lag_p10_ms"`
	StepLagP50Ms float64 `json:"step_lag_p50_ms"`
	StepLagP90Ms float64 `json:"step_lag_p90_ms"`
	StepLagMean  float64 `json:"step_lag_mean_ms"`
	// Wakes counts those steps planned right after an idle loop was woken
	// by a submit; Wake* are their lateness (completion − the submit − the
	// step's modelled time: the loop's wake-up and the step's own lag),
	// WakePlanP50Ms the median of its first part (planned − submitted, a
	// channel receive); 0 when Wakes is 0.
	Wakes         int     `json:"wakes"`
	WakeP10Ms     float64 `json:"wake_p10_ms"`
	WakeP50Ms     float64 `json:"wake_p50_ms"`
	WakeP90Ms     float64 `json:"wake_p90_ms"`
	WakeMeanMs    float64 `json:"wake_mean_ms"`
	WakePlanP50Ms float64 `json:"wake_plan_p50_ms"`

	// HTTPOverheadMs, HTTPInboundMs, EngineLagMs and EngineWakeMs are the
	// spec values to use: http_overhead_ms the median TTFT difference
	// (≥ 0), http_inbound_ms the median inbound, at most http_overhead_ms
	// (0 without a split), engine_lag_ms the median step lag (0 without
	// steps), engine_wake_ms the median woken step's lateness (0 without
	// wakes).
	HTTPOverheadMs float64 `json:"http_overhead_ms"`
	HTTPInboundMs  float64 `json:"http_inbound_ms"`
	EngineLagMs    float64 `json:"engine_lag_ms"`
	EngineWakeMs   float64 `json:"engine_wake_ms"`
}

// MeasureOverhead runs t once in real time and then once on the virtual
// clock without an HTTP path, both recorded by r's ledger (read back
// through rows), and returns the per-request differences. During the real
// run the sim target's engines report their request timings, which split
// it (Overhead), and their steps' lags, whose median is engine_lag_ms,
// and the lateness of steps planned on waking from idle, whose median is
// engine_wake_ms: the virtual run
// models both, so the median TTFT difference that remains is
// the http_overhead_ms that makes the virtual clock's latencies the real
// path's. A real-time run
// that does not end ok (HostOverloaded on a busy host, failed checks)
// measures nothing and is an error naming its failure. The gate is off in
// both runs: it does not touch the measured requests.
func (r *Runner) MeasureOverhead(ctx context.Context, t trials.Trial, rows requestReader) (Overhead, error) {
	t.Gate.Reference = trials.ReferenceNone
	t.Assert, t.Baseline = nil, ""
	if t.Workload.RequestIDPrefix == "" {
		t.Workload.RequestIDPrefix = overheadIDPrefix
	}
	ts := []trials.Trial{t, t}
	if err := trials.SetClock(ts[:1], trials.ClockReal, "overhead"); err != nil {
		return Overhead{}, err
	}
	if err := trials.SetClock(ts[1:], trials.ClockVirtual, "overhead"); err != nil {
		return Overhead{}, err
	}
	zero := 0.0
	if err := trials.SetHTTPPath(ts[1:], &zero, &zero); err != nil {
		return Overhead{}, err
	}
	probe := newSplitProbe()
	var o Overhead
	var ids [2]int64
	var recs [2][]ledger.Request
	for i, tt := range ts {
		p := probe
		if i == 1 {
			// The virtual run models the engines' lateness the real run
			// measured, so the differences are what is left: the path.
			p = nil
			o.stepDelays(probe.stepDelays())
			if err := trials.SetEngineLag(ts[1:], o.EngineLagMs); err != nil {
				return Overhead{}, err
			}
			if err := trials.SetEngineWake(ts[1:], o.EngineWakeMs); err != nil {
				return Overhead{}, err
			}
			tt = ts[1]
		}
		out, err := r.run(ctx, tt, Baseline{}, p)
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
	o.Trial, o.RealRow, o.Virtual = t.Name, ids[0], ids[1]
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
	o.HTTPOverheadMs = round2(max(0, o.TTFTP50Ms))
	o.split(probe.splits(t.Workload.RequestIDPrefix), virt)
	return o, nil
}

// stepDelays fills the step-lag and wake-up figures, engine_lag_ms and
// engine_wake_ms. Medians, not means: each constant stands for a typical
// step's (or woken step's) lateness, which sets where the typical request's
// tokens land; a few long stalls (a GC pause, the host scheduler) pull the
// mean up, and as a constant they would delay every step of the virtual
// run.
func (o *Overhead) stepDelays(lags, plans, wakes []time.Duration) {
	o.Steps = len(lags)
	o.StepLagP10Ms, o.StepLagP50Ms, o.StepLagP90Ms, o.StepLagMean = spread(lags)
	o.EngineLagMs = min(round2(o.StepLagP50Ms), trials.MaxEngineLagMs)
	o.Wakes = len(wakes)
	o.WakeP10Ms, o.WakeP50Ms, o.WakeP90Ms, o.WakeMeanMs = spread(wakes)
	o.EngineWakeMs = min(round2(o.WakeP50Ms), trials.MaxEngineWakeMs)
	_, o.WakePlanP50Ms, _, _ = spread(plans)
}

// spread is the p10, median, p90 and mean of ds in milliseconds; all 0
// when ds is empty.
func spread(ds []time.Duration) (p10, p50, p90, mean float64) {
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	xs := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		xs[i] = ms(d)
		sum += xs[i]
	}
	return quantile(xs, 0.1), quantile(xs, 0.5), quantile(xs, 0.9), sum / float64(len(xs))
}

// split fills the inbound, outbound and engine figures from the real run's
// per-request splits, the engine's against the virtual run's TTFT.
func (o *Overhead) split(ss []requestSplit, virt map[int]ledger.Request) {
	if o.Split = len(ss); o.Split == 0 {
		return
	}
	var in, out, eng []float64
	for _, s := range ss {
		in, out = append(in, ms(s.inbound)), append(out, ms(s.outbound))
		if v, ok := virt[s.index]; ok && v.Status == ledger.RequestOK {
			eng = append(eng, ms(s.engine)-v.TTFTMs)
		}
	}
	o.InboundP10Ms, o.InboundP50Ms, o.InboundP90Ms = quantile(in, 0.1), quantile(in, 0.5), quantile(in, 0.9)
	o.OutboundP10Ms, o.OutboundP50Ms, o.OutboundP90Ms = quantile(out, 0.1), quantile(out, 0.5), quantile(out, 0.9)
	if len(eng) > 0 {
		o.EngineDiffP10Ms, o.EngineDiffP50Ms, o.EngineDiffP90Ms = quantile(eng, 0.1), quantile(eng, 0.5), quantile(eng, 0.9)
	}
	o.HTTPInboundMs = min(round2(max(0, o.InboundP50Ms)), o.HTTPOverheadMs)
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

// quantile is the q-quantile of xs, the driver's percentile.
func quantile(xs []float64, q float64) float64 {
	return metrics.Percentile(slices.Sorted(slices.Values(xs)), q)
}

// round2 rounds to the 0.01 ms a spec value is given in.
func round2(x float64) float64 { return math.Round(100*x) / 100 }
