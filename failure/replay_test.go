package failure

import (
	"math"
	"strings"
	"testing"
)

// Figures recorded by adapter's BenchmarkHostOverloadJudgedByEffect on
// this project's shared 2-core test host, each measured value beside its
// trial's own virtual replay's.
var (
	// in a quiet moment (load average 1.2): the fast profile's trial, its
	// lag ratio 0.554 over the old bound (0.5), within every tolerance.
	quietFast = []ReplayFigure{
		{"output_throughput", 2532, 2532}, {"p50_ttft_ms", 2.59, 1.613}, {"p99_ttft_ms", 4.488, 2.266},
		{"p50_tpot_ms", 1.02, 1.022}, {"p99_tpot_ms", 1.052, 1.048},
	}
	// then the 4-engine trial under the benchmark's CPU hog, its lag ratio
	// 0.410 under the old bound: its TTFT tail 5.2 times the replay's.
	quietHog = []ReplayFigure{
		{"output_throughput", 2347, 2360}, {"p50_ttft_ms", 19, 15.83}, {"p99_ttft_ms", 103.4, 19.81},
		{"p50_tpot_ms", 8.577, 8.101}, {"p99_tpot_ms", 13.2, 8.306},
	}

	// The others ran while other work loaded the host (load average 9-13).
	// the 4-engine trial without the hog: within every tolerance.
	recordedOK = []ReplayFigure{
		{"output_throughput", 2350, 2360}, {"p50_ttft_ms", 17.28, 15.83}, {"p99_ttft_ms", 32.45, 19.81},
		{"p50_tpot_ms", 8.16, 8.101}, {"p99_tpot_ms", 8.594, 8.306},
	}
	// the fast profile's trial, its lag ratio 0.83 (over the old bound,
	// 0.5): within every tolerance, the TTFT tail 3.9 times the replay's.
	recordedFastOK = []ReplayFigure{
		{"output_throughput", 2532, 2532}, {"p50_ttft_ms", 2.615, 1.613}, {"p99_ttft_ms", 8.89, 2.266},
		{"p50_tpot_ms", 1.021, 1.022}, {"p99_tpot_ms", 1.514, 1.048},
	}
	// the same trial in another run: its TTFT tail past its bound
	// (2.266 × 1.65 + 10 = 13.74 ms).
	recordedFastTail = []ReplayFigure{
		{"output_throughput", 2530, 2532}, {"p50_ttft_ms", 2.578, 1.613}, {"p99_ttft_ms", 16.17, 2.266},
		{"p50_tpot_ms", 1.023, 1.022}, {"p99_tpot_ms", 1.919, 1.048},
	}
	// the 4-engine trial under the benchmark's CPU hog: every figure past
	// its bound, the TTFT tail furthest.
	recordedHog = []ReplayFigure{
		{"output_throughput", 1619, 2360}, {"p50_ttft_ms", 408.6, 15.83}, {"p99_ttft_ms", 847.4, 19.81},
		{"p50_tpot_ms", 59.92, 8.101}, {"p99_tpot_ms", 78.79, 8.306},
	}
)

func TestJudgeReplayRecordedFigures(t *testing.T) {
	for _, figs := range [][]ReplayFigure{quietFast, recordedOK, recordedFastOK} {
		if f := JudgeReplay(figs); f != nil {
			t.Errorf("recorded ok trial judged %v", f)
		}
	}
	for _, c := range []struct {
		name string
		figs []ReplayFigure
		want []string
	}{
		{"hogged in a quiet moment", quietHog, []string{"p99_ttft_ms = 103.4 measured", "19.81 in the trial's own virtual replay", "above the tolerated 42.69"}},
		{"fast profile's tail", recordedFastTail, []string{"p99_ttft_ms = 16.17 measured", "2.266 in the trial's own virtual replay", "above the tolerated 13.74"}},
		{"hogged", recordedHog, []string{"p99_ttft_ms = 847.4 measured", "19.81 in the trial's own virtual replay", "above the tolerated 42.69"}},
	} {
		f := JudgeReplay(c.figs)
		if f == nil || f.Figure != "p99_ttft_ms" || f.Value != c.figs[2].Measured || *f.Replay != c.figs[2].Replay {
			t.Fatalf("%s judged %+v, want p99_ttft_ms (the furthest past its bound) with both values", c.name, f)
		}
		for _, want := range c.want {
			if msg := f.Error(); !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", c.name, msg, want)
			}
		}
	}
}

// Every metric on both sides of its tolerance: at the bound it is within,
// just past it over, naming the metric, both values and the bound; a
// throughput is over below its bound, a latency above.
func TestJudgeReplayBothSidesOfEachTolerance(t *testing.T) {
	for _, name := range ReplayMetrics() {
		tol, _ := ReplayToleranceOf(name)
		const replay = 10.0
		bound := tol.Bound(replay)
		past := math.Nextafter(bound, math.Inf(1))
		if tol.Higher {
			past = math.Nextafter(bound, math.Inf(-1))
		}
		figs := func(measured float64) []ReplayFigure {
			var out []ReplayFigure
			for _, m := range ReplayMetrics() {
				out = append(out, ReplayFigure{Metric: m, Measured: replay, Replay: replay})
			}
			for i := range out {
				if out[i].Metric == name {
					out[i].Measured = measured
				}
			}
			return out
		}
		if f := JudgeReplay(figs(bound)); f != nil {
			t.Errorf("%s at its bound %g: %v, want within", name, bound, f)
		}
		f := JudgeReplay(figs(past))
		if f == nil || f.Figure != name || f.Value != past || f.Bound != bound || f.Replay == nil || *f.Replay != replay {
			t.Errorf("%s just past its bound %g: %+v, want HostOverloaded naming it", name, bound, f)
			continue
		}
		dir := map[bool]string{true: "below", false: "above"}[tol.Higher]
		if !strings.Contains(f.Error(), name+" = ") || !strings.Contains(f.Error(), dir+" the tolerated") {
			t.Errorf("%s message %q", name, f.Error())
		}
		if tol.Higher && JudgeReplay(figs(2*replay)) != nil {
			t.Errorf("%s above its replay judged over", name)
		}
		if !tol.Higher && JudgeReplay(figs(replay/2)) != nil {
			t.Errorf("%s below its replay judged over", name)
		}
	}
}

// With a replay the host is judged by it: the quiet fast trial, its lag
// over the default bound, is ok; the hogged one, its lag under it, is not;
// the driver's schedule delay still comes first; without a replay the lag
// bound judges as before.
func TestHostRuleWithReplay(t *testing.T) {
	lag, hogLag := 0.554, 0.410
	if f := Classify(Observation{EngineLagRatio: &hogLag, Replay: quietHog}); f == nil {
		t.Errorf("hogged at lag %g: ok, want HostOverloaded", hogLag)
	}
	if f := Classify(Observation{EngineLagRatio: &hogLag}); f != nil {
		t.Errorf("hogged at lag %g without a replay: %v, want ok (the lag bound misses it)", hogLag, f)
	}
	o := Observation{EngineLagRatio: &lag, Replay: quietFast, P99ScheduleDelayMs: 20}
	if f := Classify(o); f != nil {
		t.Errorf("lag %g within the replay's tolerance: %v, want ok", lag, f)
	}
	o.P99ScheduleDelayMs = 150
	if f, ok := Classify(o).(HostOverloaded); !ok || f.Figure != FigureScheduleDelayP99 || f.Replay != nil {
		t.Errorf("late driver with a replay: %v, want schedule_delay_p99_ms", Classify(o))
	}
	o.P99ScheduleDelayMs, o.Replay = 20, recordedHog
	if f, ok := Classify(o).(HostOverloaded); !ok || f.Figure != "p99_ttft_ms" {
		t.Errorf("hogged with a replay: %v, want p99_ttft_ms", Classify(o))
	}
	o.Replay = nil
	if f, ok := Classify(o).(HostOverloaded); !ok || f.Figure != FigureEngineLagRatio {
		t.Errorf("the quiet fast trial without a replay: %v, want refused by the lag bound", Classify(o))
	}
}

func TestHostOverloadedWithReplayRoundTrips(t *testing.T) {
	f := *JudgeReplay(recordedHog)
	kind, raw, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(kind, raw)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := back.(HostOverloaded)
	if !ok || b.Figure != f.Figure || b.Replay == nil || *b.Replay != *f.Replay || !strings.Contains(string(raw), `"replay":`) {
		t.Errorf("round trip %s → %#v", raw, back)
	}
}
