package report

import (
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/ledger"
)

func TestKnee(t *testing.T) {
	slo := &SLOInfo{TTFTMs: 100}
	pts := func(meets ...bool) []SeriesPoint {
		out := make([]SeriesPoint, len(meets))
		for i, m := range meets {
			out[i] = SeriesPoint{ID: int64(i + 1), Rate: float64(10 * (i + 1)), MeetsSLO: m}
		}
		return out
	}
	for _, c := range []struct {
		name     string
		pts      []SeriesPoint
		slo      *SLOInfo
		want     int64
		noteHave string
	}{
		{"no SLO", pts(true, true), nil, 0, "no SLO known"},
		{"none meets", pts(false, false), slo, 0, "below 10 req/s"},
		{"knee inside", pts(true, true, false), slo, 2, "knee at 20 req/s (90% of requests within the SLOs); the next rate tried, 30 req/s, misses"},
		{"every rate meets", pts(true, true), slo, 2, "the highest rate tried"},
		// The highest rate meeting wins, as defined, even past a miss.
		{"noisy", pts(true, false, true, false), slo, 3, "knee at 30 req/s"},
	} {
		got, note := knee(c.pts, c.slo, 0.9)
		if got != c.want || !strings.Contains(note, c.noteHave) {
			t.Errorf("%s: knee %d (%q), want %d with %q", c.name, got, note, c.want, c.noteHave)
		}
	}
}

// Goodput follows the driver's definition: requests meeting every bound
// per second of the measured window; failed requests count as missing.
func TestGoodput(t *testing.T) {
	reqs := []ledger.Request{
		{TTFTMs: 50, TPOTMs: 5, OutputTokens: 4, Status: ledger.RequestOK},
		{TTFTMs: 90, TPOTMs: 5, OutputTokens: 4, Status: ledger.RequestOK},
		{TTFTMs: 150, TPOTMs: 5, OutputTokens: 4, Status: ledger.RequestOK}, // misses TTFT
		{TTFTMs: 50, TPOTMs: 30, OutputTokens: 4, Status: ledger.RequestOK}, // misses TPOT
		{TTFTMs: 10, Status: "http_500"},
	}
	g, att := goodput(reqs, 2, metrics.SLO{TTFTMs: 100, TPOTMs: 20})
	if g != 1 || att != 0.4 {
		t.Errorf("goodput %g req/s, attainment %g; want 1 (2 of 5 in 2 s) and 0.4", g, att)
	}
}

// The report's goodput is the driver's to the last bit, also for the
// durations whose seconds, times 1e9, fall just short of the nanosecond
// count they came from (a truncating conversion lost 1 ns on these).
func TestGoodputEqualsDriversBitForBit(t *testing.T) {
	reqs := []ledger.Request{{TTFTMs: 50, TPOTMs: 5, OutputTokens: 4, Status: ledger.RequestOK}}
	recs := []metrics.RequestRecord{{Sent: true, Success: true, TTFTMs: 50, TPOTMs: 5, OutputTokens: 4}}
	slo := metrics.SLO{TTFTMs: 100}
	checked := 0
	for ns := time.Duration(200_000_000); checked < 50; ns += 7_919 {
		if time.Duration(ns.Seconds()*float64(time.Second)) == ns {
			continue // round-trips either way: not the case under test
		}
		checked++
		want := *metrics.Summarize(recs, metrics.Params{Duration: ns, Goodput: slo}).RequestGoodput
		if g, _ := goodput(reqs, ns.Seconds(), slo); g != want {
			t.Fatalf("duration %v: report goodput %v, driver's %v", ns, g, want)
		}
	}
}

func TestBuildCurvesGroupsByEverythingButRate(t *testing.T) {
	mk := func(id int64, name, policy string, rate float64, ttft float64) curveRow {
		w := []Setting{{Key: "arrival.request_rate", Value: "x"}, {Key: "kind", Value: "random"}}
		reqs := make([]ledger.Request, 10)
		for i := range reqs {
			reqs[i] = ledger.Request{Index: i, TTFTMs: ttft, Status: ledger.RequestOK, OutputTokens: 1}
		}
		return curveRow{row: Row{ID: id, Name: name, Metrics: map[string]float64{"duration": 1},
			Identity: Identity{Topology: "2 replicas", Router: []Setting{{Key: "policy", Value: policy}}, Workload: w, Rate: rate}}, reqs: reqs}
	}
	rows := []curveRow{
		mk(1, "s/router.policy=rr,workload.arrival.request_rate=10", "rr", 10, 50),
		mk(2, "s/router.policy=rr,workload.arrival.request_rate=40", "rr", 40, 500),
		mk(3, "s/router.policy=ca,workload.arrival.request_rate=40", "ca", 40, 50),
		mk(4, "s/router.policy=ca,workload.arrival.request_rate=10", "ca", 10, 50),
		mk(5, "closed-loop", "ca", 0, 50),
	}
	c := buildCurves(rows, metrics.SLO{TTFTMs: 100}, "test", 0.9)
	if len(c.Series) != 2 || len(c.Unplaced) != 1 || c.Unplaced[0] != 5 {
		t.Fatalf("want two series and row 5 unplaced, got %+v", c)
	}
	rr, ca := c.Series[0], c.Series[1]
	if rr.Label != "s/router.policy=rr" || ca.Label != "s/router.policy=ca" {
		t.Errorf("labels %q, %q", rr.Label, ca.Label)
	}
	if ca.Points[0].ID != 4 || ca.Points[1].ID != 3 {
		t.Errorf("points not in rate order: %+v", ca.Points)
	}
	if rr.Knee != 1 || ca.Knee != 3 {
		t.Errorf("knees %d and %d, want 1 (40 req/s misses) and 3 (every rate meets)", rr.Knee, ca.Knee)
	}
	if g := *rr.Points[0].Goodput; g != 10 {
		t.Errorf("goodput %g, want 10 req/s (10 requests in 1 s)", g)
	}

	none := buildCurves(rows, metrics.SLO{}, "", 0.9)
	if none.SLO != nil || none.Series[0].Knee != 0 || none.Series[0].Points[0].Goodput != nil {
		t.Errorf("without an SLO there is no goodput and no knee: %+v", none.Series[0])
	}
}

func TestECDF(t *testing.T) {
	got := ecdf([]float64{3, 1, 2, 4}, 10)
	want := [][2]float64{{1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
	big := make([]float64, 1001)
	for i := range big {
		big[i] = float64(1000 - i)
	}
	d := ecdf(big, 11)
	if len(d) != 11 || d[0] != [2]float64{0, 1.0 / 1001} || d[10] != [2]float64{1000, 1} || d[5][0] != 500 {
		t.Errorf("downsampled: %v", d)
	}
	if len(ecdf(nil, 5)) != 0 {
		t.Error("empty sample must give no points")
	}
}

func TestFlattenAndVaries(t *testing.T) {
	s, err := flatten([]byte(`{"policy":"rr","retry":{"max_retries":5,"backoff":[1,2]},"cache_threshold":0.3}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{{Key: "cache_threshold", Value: "0.3"}, {Key: "policy", Value: "rr"}, {Key: "retry.backoff", Value: "[1,2]"}, {Key: "retry.max_retries", Value: "5"}}
	if len(s) != len(want) {
		t.Fatalf("got %v", s)
	}
	for i := range want {
		if s[i] != want[i] {
			t.Errorf("setting %d: %v, want %v", i, s[i], want[i])
		}
	}
	rows := []Row{
		{Identity: Identity{Router: []Setting{{Key: "policy", Value: "rr"}, {Key: "x", Value: "1"}}}},
		{Identity: Identity{Router: []Setting{{Key: "policy", Value: "ca"}, {Key: "x", Value: "1"}, {Key: "only_here", Value: "1"}}}},
	}
	markVaries(rows)
	r0, r1 := rows[0].Identity.Router, rows[1].Identity.Router
	if !r0[0].Varies || r0[1].Varies || !r1[0].Varies || r1[1].Varies || !r1[2].Varies {
		t.Errorf("varies: %v / %v", r0, r1)
	}
}
