package policy

import (
	"testing"
	"time"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// observed is a predicted_latency that has seen "fast" at 20 ms TTFT and
// "slow" at 80 ms, both at loads 0 and 4 (so each line has a slope), with
// TPOT 10 and 40 ms.
func observed(t *testing.T, refuse bool) *predictedLatency {
	t.Helper()
	p, err := New(PredictedLatency, Params{SLORefuse: refuse}, NewLockedRand(1))
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*predictedLatency)
	for _, load := range []float64{0, 4} {
		pl.Observe("fast", Observation{Load: load, TTFT: ms(20 * (1 + load)), TPOT: ms(10)})
		pl.Observe("slow", Observation{Load: load, TTFT: ms(80 * (1 + load)), TPOT: ms(40)})
	}
	return pl
}

func TestPredictedLatencyPrefersThePredictedFaster(t *testing.T) {
	t.Parallel()
	p := observed(t, false)
	cands := []Candidate{{ID: "slow"}, {ID: "fast", InFlight: 2}}
	// fast at load 3: 80 ms TTFT; slow at load 1: 160 ms.
	if d, ok := p.Pick(Request{}, cands); !ok || d.Index != 1 {
		t.Errorf("Pick = %+v, %v; want the fast worker despite its load", d, ok)
	}
	// fast at load 9: 200 ms + 128×10 ms; slow idle: 160 ms + 128×40 ms.
	cands[1].InFlight = 8
	if d, _ := p.Pick(Request{}, cands); d.Index != 1 {
		t.Errorf("Pick = %+v; the slow worker's TPOT makes it worse even idle", d)
	}
}

// A request whose SLO no candidate is predicted to meet is refused when
// the policy refuses, deprioritised (sent to the best) otherwise, and each
// case is counted.
func TestPredictedLatencySLORefusal(t *testing.T) {
	t.Parallel()
	cands := []Candidate{{ID: "slow"}, {ID: "fast", InFlight: 4}} // fast: 100 ms TTFT, slow: 160 ms
	tight := Request{SLO: SLO{TTFT: ms(50)}}
	loose := Request{SLO: SLO{TTFT: ms(120), TPOT: ms(20)}}

	refusing := observed(t, true)
	if d, ok := refusing.Pick(tight, cands); ok || d.Outcome != OutcomeSLORefused {
		t.Errorf("tight SLO: Pick = %+v, %v; want a refusal", d, ok)
	}
	if d, ok := refusing.Pick(loose, cands); !ok || d.Index != 1 || d.Outcome != OutcomeSLOMet {
		t.Errorf("loose SLO: Pick = %+v, %v; want the fast worker, SLO met", d, ok)
	}
	if s := refusing.Stats(); s != (SLOStats{Met: 1, Refused: 1}) {
		t.Errorf("stats = %+v, want one met, one refused", s)
	}

	lenient := observed(t, false)
	if d, ok := lenient.Pick(tight, cands); !ok || d.Index != 1 || d.Outcome != OutcomeSLOMissed {
		t.Errorf("tight SLO, not refusing: Pick = %+v, %v; want the best candidate, SLO missed", d, ok)
	}
	if s := lenient.Stats(); s != (SLOStats{Missed: 1}) {
		t.Errorf("stats = %+v, want one missed", s)
	}
}

func TestPredictedLatencyUnobservedIsLeastLoaded(t *testing.T) {
	t.Parallel()
	p, _ := New(PredictedLatency, Params{SLORefuse: true}, nil)
	d, ok := p.Pick(Request{SLO: SLO{TTFT: ms(1)}}, []Candidate{{ID: "a", InFlight: 3}, {ID: "b", InFlight: 1}})
	if !ok || d.Index != 1 {
		t.Errorf("Pick = %+v, %v; want the least loaded while nothing is observed", d, ok)
	}
	if s := p.(*predictedLatency).Stats(); s.Unscored != 1 {
		t.Errorf("stats = %+v, want one unscored", s)
	}
}

// A worker never observed is predicted from the fit over all workers.
func TestPredictedLatencyPoolsForUnobservedWorkers(t *testing.T) {
	t.Parallel()
	p := observed(t, false)
	// pooled TTFT at load 1 is between fast's 40 ms and slow's 160 ms.
	d, _ := p.Pick(Request{}, []Candidate{{ID: "slow"}, {ID: "new"}})
	if d.Index != 1 {
		t.Errorf("Pick = %+v; want the unobserved worker predicted from the pooled fit", d)
	}
}
