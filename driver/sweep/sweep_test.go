package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

func TestRatesAreEvenlyInside(t *testing.T) {
	got := Rates(10, 70, 5)
	if !slices.Equal(got, []float64{20, 30, 40, 50, 60}) {
		t.Fatalf("Rates(10, 70, 5) = %v", got)
	}
}

func TestKneeIsTheHighestMeetingRate(t *testing.T) {
	pts := []Point{{Label: Synchronous, Meets: true}, {Label: Throughput}, {Rate: 20, Meets: true}, {Rate: 30, Meets: true},
		{Rate: 40, Meets: false}, {Rate: 50, Meets: true}, {Rate: 60}}
	if k := Knee(pts); k != 5 {
		t.Fatalf("knee = %d, want 5 (rate 50: the highest rate that meets)", k)
	}
	if k := Knee(pts[:2]); k != -1 {
		t.Fatalf("knee without rates = %d, want -1", k)
	}
}

func TestAttainmentCountsFailuresNotUnsent(t *testing.T) {
	recs := []metrics.RequestRecord{
		{Success: true, TTFTMs: 5}, {Success: true, TTFTMs: 50}, {ErrorType: "http_error"},
		{ErrorType: metrics.NotSent}, {ErrorType: metrics.Incomplete},
	}
	if got := Attainment(recs, metrics.SLO{TTFTMs: 10}); got != 1.0/3 {
		t.Fatalf("attainment = %v, want 1/3 (one of three sent requests in the SLO)", got)
	}
}

func TestCheckNamesEveryProblem(t *testing.T) {
	cfg := driver.Config{Arrival: driver.Arrival{Kind: "gamma", RequestRate: 3}}
	err := check(cfg, &Options{Attainment: 2, Kind: "inf"})
	for _, want := range []string{"arrival.kind", "arrival.request_rate", "goodput", "knee_attainment"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check error %v does not name %s", err, want)
		}
	}
}

// TestSweepAgainstSim runs a small sweep against a simulated engine: a
// synchronous run, a throughput run, then the rates in between, every run
// sending the same prompts (equal sent hashes apart from the schedule).
func TestSweepAgainstSim(t *testing.T) {
	url := simtest.Start(t, sim.Options{})
	cfg := driver.Config{BaseURL: url, Model: simtest.DefaultModel, NumPrompts: 20, WarmupRequests: 2,
		Workload: driver.Workload{Kind: "random", InputLen: 32, OutputLen: 4}, Goodput: driver.SLO{E2ELMs: 60_000}}
	res, err := Run(context.Background(), cfg, Options{Rates: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 4 || res.Points[0].Label != Synchronous || res.Points[1].Label != Throughput {
		t.Fatalf("points %+v, want synchronous, throughput and 2 rates", res.Points)
	}
	if !(res.SyncRate > 0 && res.MaxRate >= res.SyncRate) {
		t.Errorf("sync rate %v, max rate %v", res.SyncRate, res.MaxRate)
	}
	for _, p := range res.Points {
		if p.Result.Summary.Completed != 20 || p.Result.Summary.SentHash != res.Points[0].Result.Summary.SentHash {
			t.Errorf("%s: completed %d, sent hash %s; want 20 and the synchronous run's prompts", p.Label, p.Result.Summary.Completed, p.Result.Summary.SentHash)
		}
	}
	if k := res.KneePoint(); k == nil || k.Rate != res.Points[3].Rate {
		t.Errorf("knee %+v, want the highest rate (every request meets a 60 s SLO)", k)
	}
}
