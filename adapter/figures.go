package adapter

import (
	"maps"
	"math"
	"slices"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/target/scrape"
)

// The worker series the window figures come from (vLLM's names; the lag
// series are the simulated engine's own).
const (
	hitsSeries       = "vllm:prefix_cache_hits_total"
	queriesSeries    = "vllm:prefix_cache_queries_total"
	preemptSeries    = "vllm:num_preemptions_total"
	pullsSeries      = "vllm:kv_transfer_pulls_total"
	cpuHitsSeries    = "vllm:external_prefix_cache_hits_total"
	kvUsageSeries    = "vllm:kv_cache_usage_perc"
	kvStepSeries     = "autoinfer:sim_kv_usage_step_perc"
	stepLagSeries    = "autoinfer:sim_step_lag_seconds_total"
	modelBusySeries  = "autoinfer:sim_modelled_busy_seconds_total"
	pullOK, pullFail = "ok", "failed"
)

// engineDeltas are one engine's counter differences over the window; a
// nil field is a series the engine does not export.
type engineDeltas struct {
	hits, queries, preempt, pullsOK, pullsFailed, cpuHits, lag, busy *float64
}

// deltaOf is after − before of the series' sum, nil when either scrape
// lacks the family.
func deltaOf(before, after scrape.Families, name string, match map[string]string) *float64 {
	if !before.Has(name) || !after.Has(name) {
		return nil
	}
	d := after.Sum(name, match) - before.Sum(name, match)
	return &d
}

func deltasOf(before, after scrape.Families) engineDeltas {
	return engineDeltas{
		hits: deltaOf(before, after, hitsSeries, nil), queries: deltaOf(before, after, queriesSeries, nil),
		preempt:     deltaOf(before, after, preemptSeries, nil),
		pullsOK:     deltaOf(before, after, pullsSeries, map[string]string{"result": pullOK}),
		pullsFailed: deltaOf(before, after, pullsSeries, map[string]string{"result": pullFail}),
		cpuHits:     deltaOf(before, after, cpuHitsSeries, nil),
		lag:         deltaOf(before, after, stepLagSeries, nil), busy: deltaOf(before, after, modelBusySeries, nil),
	}
}

// add sums the exported series of d into e.
func (e *engineDeltas) add(d engineDeltas) {
	for _, p := range []struct {
		dst **float64
		src *float64
	}{
		{&e.hits, d.hits}, {&e.queries, d.queries}, {&e.preempt, d.preempt}, {&e.pullsOK, d.pullsOK},
		{&e.pullsFailed, d.pullsFailed}, {&e.cpuHits, d.cpuHits}, {&e.lag, d.lag}, {&e.busy, d.busy},
	} {
		if p.src == nil {
			continue
		}
		if *p.dst == nil {
			*p.dst = new(float64)
		}
		**p.dst += *p.src
	}
}

// figures turns counter differences into the row's figures.
func (e engineDeltas) figures() ledger.Figures {
	var f ledger.Figures
	if e.hits != nil && e.queries != nil && *e.queries > 0 {
		f.PrefixCacheHitRate = ratio(*e.hits, *e.queries)
	}
	if e.hits != nil && e.queries != nil && e.cpuHits != nil && *e.queries > 0 {
		f.AllTiersHitRate = ratio(*e.hits+*e.cpuHits, *e.queries)
	}
	if e.lag != nil && e.busy != nil && *e.busy > 0 {
		f.EngineLagRatio = ratio(*e.lag, *e.busy)
	}
	f.Preemptions, f.KVTransfers, f.KVTransferFailures, f.CPUTierHits =
		count(e.preempt), count(e.pullsOK), count(e.pullsFailed), count(e.cpuHits)
	return f
}

func ratio(a, b float64) *float64 { r := a / b; return &r }

func count(v *float64) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v + 0.5)
	return &n
}

// figures are the window's figures: per engine (every worker scraped at
// both edges) and in total.
func (w *window) figures() ledger.Window {
	if w.after == nil {
		return ledger.Window{}
	}
	var engines []ledger.EngineFigure
	var total engineDeltas
	for _, u := range w.workers {
		b, okB := w.before[u]
		a, okA := w.after[u]
		if !okB || !okA {
			continue
		}
		d := deltasOf(b, a)
		total.add(d)
		ef := ledger.EngineFigure{Worker: u, Figures: d.figures()}
		var own []float64
		for _, s := range w.samples {
			if v, ok := s[u]; ok {
				own = append(own, v)
			}
		}
		if len(own) > 0 {
			ef.KVUsagePeak, ef.KVUsageMean = ptr(slices.Max(own)), ptr(meanOf(own))
		}
		if p, ok := stepPeak(b, a); ok {
			ef.KVUsagePeak = &p
		}
		engines = append(engines, ef)
	}
	return totalled(engines, total)
}

// totalled is the window of the engines' figures, its total from their
// summed counter differences: the most loaded engine's KV peak (did any
// run out of KV?) and the engines' mean usage.
func totalled(engines []ledger.EngineFigure, total engineDeltas) ledger.Window {
	out := ledger.Window{Engines: engines, Figures: total.figures()}
	var peaks, means []float64
	for _, ef := range out.Engines {
		if ef.KVUsagePeak != nil {
			peaks = append(peaks, *ef.KVUsagePeak)
		}
		if ef.KVUsageMean != nil {
			means = append(means, *ef.KVUsageMean)
		}
	}
	if len(peaks) > 0 {
		out.KVUsagePeak = ptr(slices.Max(peaks))
	}
	if len(means) > 0 {
		out.KVUsageMean = ptr(meanOf(means))
	}
	return out
}

// stepPeak is an engine's highest per-step KV usage in the window, from
// the simulated engine's per-step histogram: the upper bound of the lowest
// bucket that holds every step of the window. False when the engine does
// not export it or made no step.
func stepPeak(before, after scrape.Families) (float64, bool) {
	if !before.Has(kvStepSeries) {
		return 0, false
	}
	b, a := buckets(before), buckets(after)
	total := after.Sum(kvStepSeries, nil) - before.Sum(kvStepSeries, nil)
	if total <= 0 {
		return 0, false
	}
	for _, ub := range slices.Sorted(maps.Keys(a)) {
		if a[ub]-b[ub] >= total {
			return min(ub, 1), true
		}
	}
	return 1, true
}

// buckets sums the per-step histogram's cumulative bucket counts over an
// engine's ranks, by upper bound.
func buckets(f scrape.Families) map[float64]float64 {
	out := map[float64]float64{}
	fam, ok := f[kvStepSeries]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		for _, bk := range m.GetHistogram().GetBucket() {
			if !math.IsInf(bk.GetUpperBound(), 1) {
				out[bk.GetUpperBound()] += float64(bk.GetCumulativeCount())
			}
		}
	}
	return out
}

func meanOf(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func ptr(v float64) *float64 { return &v }
