package failure

import (
	"fmt"
	"math"
)

// ReplayFigure is one metric of a real-time trial beside the same metric of
// the trial's own virtual replay: the same request stream on the virtual
// clock, where the host cannot be late. The replay is what the deployment
// gives when the machine keeps up; a measurement worse than it by more than
// the metric's tolerance describes the machine.
type ReplayFigure struct {
	Metric   string  `json:"metric"`
	Measured float64 `json:"measured"`
	Replay   float64 `json:"replay"`
}

// ReplayTolerance is how much worse than its replay a measured figure may
// be: Rel as a share of the replay's value plus, for a latency, AbsMs
// milliseconds (the HTTP path and the engines' lateness, which a replay
// models only when the spec states them). A throughput may fall Rel below
// its replay.
type ReplayTolerance struct {
	Rel   float64
	AbsMs float64
	// Higher says a higher value is better (a throughput).
	Higher bool
}

// replayTolerances are the compared metrics and their tolerances
// (docs/failures.md, "Judged by its effect", gives the measurements behind
// them):
// about twice the run-to-run spread of five real runs of one trial on a
// quiet host (throughput 0.0 %, TTFT p50 up to 16.6 % and p99 up to 30.9 %
// where the prefix cache makes them bimodal, TPOT p50 1.0 % and p99 0.8 %),
// with the throughput at the project's 5 % prediction tolerance, plus for
// latencies the part of the real path a replay without the spec's
// constants leaves out (the HTTP path, about 1 ms, and the engines' wake-up
// lateness, about 1 ms, on TTFT; a step's lateness on TPOT) and, at the
// TTFT's tail, the odd stall of the process of up to about 10 ms that the
// few slowest of a few hundred requests meet even when it runs ahead of
// the host's other work.
var replayTolerances = []struct {
	metric string
	tol    ReplayTolerance
}{
	{"output_throughput", ReplayTolerance{Rel: 0.05, Higher: true}},
	{"p50_ttft_ms", ReplayTolerance{Rel: 0.35, AbsMs: 2}},
	{"p99_ttft_ms", ReplayTolerance{Rel: 0.65, AbsMs: 10}},
	{"p50_tpot_ms", ReplayTolerance{Rel: 0.1, AbsMs: 0.25}},
	{"p99_tpot_ms", ReplayTolerance{Rel: 0.2, AbsMs: 1}},
}

// ReplayMetrics are the metrics a trial is compared with its replay on, in
// the order they are judged.
func ReplayMetrics() []string {
	out := make([]string, len(replayTolerances))
	for i, r := range replayTolerances {
		out[i] = r.metric
	}
	return out
}

// ReplayToleranceOf is the tolerance of metric; false when the metric is
// not compared with the replay.
func ReplayToleranceOf(metric string) (ReplayTolerance, bool) {
	for _, r := range replayTolerances {
		if r.metric == metric {
			return r.tol, true
		}
	}
	return ReplayTolerance{}, false
}

// Bound is the worst measured value the tolerance accepts against a replay
// value: the floor of a throughput, the ceiling of a latency.
func (t ReplayTolerance) Bound(replay float64) float64 {
	if t.Higher {
		return replay * (1 - t.Rel)
	}
	return replay*(1+t.Rel) + t.AbsMs
}

// over is how far measured lies past the bound, as a ratio (> 1: past it):
// measured/bound for a latency, bound/measured for a throughput.
func (t ReplayTolerance) over(measured, bound float64) float64 {
	switch {
	case t.Higher && measured <= 0:
		if bound > 0 {
			return math.Inf(1)
		}
		return 0
	case t.Higher:
		return bound / measured
	case bound <= 0:
		return 0
	}
	return measured / bound
}

// JudgeReplay compares measured figures with their replay's, metric by
// metric, and returns the one furthest past its tolerance as
// HostOverloaded (naming the metric, the measured value, the replay's and
// the bound), or nil when every figure is within its tolerance. Figures of
// metrics without a tolerance are ignored.
func JudgeReplay(figs []ReplayFigure) *HostOverloaded {
	var worst *HostOverloaded
	worstBy := 1.0
	for _, f := range figs {
		tol, ok := ReplayToleranceOf(f.Metric)
		if !ok {
			continue
		}
		bound := tol.Bound(f.Replay)
		if by := tol.over(f.Measured, bound); by > worstBy {
			replay := f.Replay
			worst, worstBy = &HostOverloaded{Figure: f.Metric, Value: f.Measured, Bound: bound, Replay: &replay}, by
		}
	}
	return worst
}

// replayMessage is HostOverloaded's message when a replay judged it.
func (f HostOverloaded) replayMessage() string {
	dir := "above"
	if tol, ok := ReplayToleranceOf(f.Figure); ok && tol.Higher {
		dir = "below"
	}
	return fmt.Sprintf("host overloaded: %s = %s measured, %s in the trial's own virtual replay, %s the tolerated %s "+
		"(the figures would describe this machine, not the deployment)",
		f.Figure, round(f.Value), round(*f.Replay), dir, round(f.Bound))
}
