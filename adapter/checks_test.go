package adapter

import (
	"testing"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/ledger/metric"
	"github.com/autoinfer/autoinfer/trials"
)

// Every catalogued metric can be checked: the checks read the row about to
// be written by catalogue name, so a metric pareto can plot is one an
// assertion can bound (achieved_request_rate was not).
func TestChecksReadEveryCataloguedMetric(t *testing.T) {
	passed := true
	rate, n := 0.5, int64(3)
	row := ledger.Trial{Gate: ledger.Gate{GatePassed: &passed}, RouterMetricsURL: "http://127.0.0.1:1/metrics", ShedRate: &rate,
		Window: ledger.Window{Figures: ledger.Figures{PrefixCacheHitRate: &rate, AllTiersHitRate: &rate, EngineLagRatio: &rate,
			Preemptions: &n, CPUTierHits: &n, KVTransferFailures: &n}}}
	vals := checkValues(row, driver.Summary{ExtraPercentiles: map[string]float64{"p95_ttft_ms": 7}})
	for _, m := range metric.All() {
		if _, ok := vals[m.Name]; !ok {
			t.Errorf("%s: catalogued but not readable by checks", m.Name)
		}
	}
	if vals["p95_ttft_ms"] != 7 {
		t.Errorf("on-demand percentile p95_ttft_ms = %v, want 7", vals["p95_ttft_ms"])
	}
}

// A figure the trial did not measure is absent, so an assertion on it
// fails as unmeasured rather than passing on a 0.
func TestChecksOnUnmeasuredFiguresDoNotPass(t *testing.T) {
	row := ledger.Trial{Metrics: ledger.Metrics{AchievedRequestRate: 3.5}}
	var as []trials.Assertion
	for _, s := range []string{"achieved_request_rate > 1", "achieved_request_rate > 4", "gate_kl_max < 1", "load_balancing_events <= 3"} {
		a, err := trials.ParseAssertion(s)
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	tr := &trialRun{Runner: &Runner{}, t: trials.Trial{Assertions: as}}
	got := tr.checkFailures(checkValues(row, driver.Summary{}))
	if len(got) != 3 {
		t.Fatalf("failures = %v, want 3 (one violation, two unmeasured)", got)
	}
	if v, ok := got[0].(failure.AssertionViolated); !ok || v.Metric != "achieved_request_rate" || v.Value != 3.5 || v.Bound != 4 {
		t.Errorf("first = %#v, want AssertionViolated achieved_request_rate 3.5 > 4", got[0])
	}
	for _, f := range got[1:] {
		if f.Kind() != failure.KindUnknown {
			t.Errorf("unmeasured figure gave %s: %v", f.Kind(), f)
		}
	}
}
