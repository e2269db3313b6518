package adapter

import (
	"context"
	"fmt"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/sweep"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

// SweepPoint is one run of a saturation sweep: its trial's outcome (one
// ledger row), the rate it offered (0 for the synchronous and throughput
// runs) and the share of its requests within every SLO.
type SweepPoint struct {
	Outcome
	Role string  `json:"role"`
	Rate float64 `json:"rate,omitempty"`
	// Attainment is the share of the run's sent requests that succeeded
	// within every SLO; Meets says it reached the sweep's threshold on an
	// ok row (a failed row is no evidence that the rate is sustainable).
	Attainment float64 `json:"slo_attainment"`
	Meets      bool    `json:"meets_slo"`
	// Elapsed is the run's wall time, provisioning and teardown included.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// SweepOutcome is a finished (or stopped) sweep.
type SweepOutcome struct {
	Name    string       `json:"name"`
	SweepID string       `json:"sweep_id"`
	Points  []SweepPoint `json:"points"`
	// SyncRate and MaxRate are the request rates the synchronous and
	// throughput runs achieved; the constant rates lie between them.
	SyncRate float64 `json:"sync_rate"`
	MaxRate  float64 `json:"max_rate"`
	// Threshold is the attainment a rate needs (sweep.DefaultAttainment).
	Threshold float64 `json:"attainment_threshold"`
	// Knee is the index in Points of the highest rate meeting the SLOs, -1
	// for none; Note says what the knee means or why there is none.
	Knee int    `json:"knee"`
	Note string `json:"note"`
}

// KneePoint returns the knee's point, or nil.
func (s *SweepOutcome) KneePoint() *SweepPoint {
	if s.Knee < 0 {
		return nil
	}
	return &s.Points[s.Knee]
}

// RunSweep runs sweep trial t (t.IsSweep()): the synchronous run, the
// throughput run, then t.SweepRates() constant rates spaced evenly between
// the two rates achieved, each a full trial (fresh workers and router,
// warm-up, gate) recorded as its own row of one sweep. starting is called
// with each run's trial before it starts. When a run cannot be recorded or
// ctx ends, RunSweep returns the points so far with the error; when the
// synchronous or throughput run fails, the rates are unknown and the sweep
// stops there, with a note.
func (r *Runner) RunSweep(ctx context.Context, t trials.Trial, starting func(trials.Trial)) (SweepOutcome, error) {
	res := SweepOutcome{Name: t.Name, Threshold: sweep.DefaultAttainment, Knee: -1}
	slo := sweepSLO(t)
	run := func(role string, rate float64) (*SweepPoint, error) {
		rt, err := t.SweepRun(role, rate)
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", t.Name, err)
		}
		res.SweepID = rt.SweepID
		if starting != nil {
			starting(rt)
		}
		tr := &trialRun{Runner: r, t: rt, started: time.Now()}
		tr.runID = fmt.Sprintf("%s-%d", slug(rt.Name), tr.started.UnixNano())
		tr.executeOnClock(ctx) // a virtual sweep's runs are virtual too
		out, err := tr.record(ctx)
		p := SweepPoint{Outcome: out, Role: role, Rate: rt.Workload.Arrival.RequestRate, Elapsed: time.Since(tr.started)}
		switch {
		case tr.measured != nil:
			p.Attainment = tr.measured.attain.Attainment()
		case tr.result != nil:
			p.Attainment = sweep.Attainment(tr.result.Requests, slo)
		}
		p.Meets = out.Status == ledger.StatusOK && p.Attainment >= res.Threshold
		res.Points = append(res.Points, p)
		return &res.Points[len(res.Points)-1], err
	}
	syn, err := run(trials.SweepSynchronous, 0)
	if err != nil {
		return res, err
	}
	top, err := run(trials.SweepThroughput, 0)
	if err != nil {
		return res, err
	}
	switch {
	case syn.Status != ledger.StatusOK || top.Status != ledger.StatusOK:
		res.Note = "the synchronous or throughput run failed, so the rates between them are unknown: no rate swept"
		return res, nil
	case !(top.Summary.RequestThroughput > syn.Summary.RequestThroughput):
		res.Note = fmt.Sprintf("the throughput run (%.4g req/s) was no faster than the synchronous run (%.4g req/s): no rates between them to sweep",
			top.Summary.RequestThroughput, syn.Summary.RequestThroughput)
		return res, nil
	}
	res.SyncRate, res.MaxRate = syn.Summary.RequestThroughput, top.Summary.RequestThroughput
	for _, rate := range sweep.Rates(res.SyncRate, res.MaxRate, t.SweepRates()) {
		if _, err := run(trials.SweepRate, rate); err != nil {
			return res, err
		}
	}
	res.Knee, res.Note = sweepKnee(res.Points, res.Threshold)
	return res, nil
}

// sweepKnee picks the knee with driver/sweep's rule and says what it means:
// whether a faster rate missed (the knee lies inside the range), or the
// highest rate met (it may lie higher), or a faster run failed outright.
func sweepKnee(pts []SweepPoint, threshold float64) (int, string) {
	sp := make([]sweep.Point, len(pts))
	for i, p := range pts {
		sp[i] = sweep.Point{Label: p.Role, Rate: p.Rate, Meets: p.Meets}
	}
	k := sweep.Knee(sp)
	share := fmt.Sprintf("%.0f%% of requests within the SLOs", 100*threshold)
	if k < 0 {
		return k, fmt.Sprintf("no rate swept had %s: the knee lies below %.4g req/s", share, firstRate(pts))
	}
	next := -1
	for i, p := range pts {
		if p.Rate > pts[k].Rate && (next < 0 || p.Rate < pts[next].Rate) {
			next = i
		}
	}
	switch {
	case next < 0:
		return k, fmt.Sprintf("knee at %.4g req/s, the highest rate swept (%s): it may lie higher", pts[k].Rate, share)
	case pts[next].Status != ledger.StatusOK:
		return k, fmt.Sprintf("knee at %.4g req/s (%s); the next rate, %.4g req/s, failed (%s), so the knee may lie higher",
			pts[k].Rate, share, pts[next].Rate, failureKind(pts[next].Outcome))
	}
	return k, fmt.Sprintf("knee at %.4g req/s (%s); the next rate, %.4g req/s, had %.1f%%",
		pts[k].Rate, share, pts[next].Rate, 100*pts[next].Attainment)
}

func firstRate(pts []SweepPoint) float64 {
	for _, p := range pts {
		if p.Rate > 0 {
			return p.Rate
		}
	}
	return 0
}

func failureKind(o Outcome) string {
	if o.Failure == nil {
		return string(o.Status)
	}
	return string(o.Failure.Kind())
}

func sweepSLO(t trials.Trial) metrics.SLO {
	return metrics.SLO{TTFTMs: t.SLO.TTFTMs, TPOTMs: t.SLO.TPOTMs, E2ELMs: t.SLO.E2ELMs}
}
