package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/ledger"
)

// driftFixture records, for each of two profiles, one virtual prediction
// and four real rows it predicted, an hour apart: profile "drifts" sees
// its TPOT measured 30 % above its prediction from the third row on (a
// recent median of 15 %, past the 5 % it states),
// profile "holds" stays within 2 % on every metric.
func driftFixture(t *testing.T) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l := openLedger(t)
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	row := func(name, hash string, clock string, at time.Time, tpot float64, by *int64) int64 {
		tr := ledger.Trial{Name: name, Status: ledger.StatusOK, StartedAt: at, FinishedAt: at.Add(time.Minute),
			EngineConfig: ledger.JSON(`{"model":"m"}`), Topology: ledger.Topology{Replicas: 1}, PredictedBy: by,
			Identity: ledger.Identity{TargetKind: "static", Hardware: "h100", Model: "m", WorkloadHash: "w", Clock: clock}}
		if clock == ledger.ClockVirtual {
			tr.Hardware, tr.HardwareConfig = hash, ledger.JSON(`{"content_hash":"`+hash+`"}`)
		}
		tr.Completed, tr.Duration, tr.OutputThroughput, tr.P50TTFTMs, tr.P50TPOTMs = 10, 1, 500, 40, tpot
		rec, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rec.ID
	}
	for _, p := range []struct {
		name  string
		drift float64
	}{{"drifts", 1.3}, {"holds", 1.02}} {
		v := row(p.name+"-prediction", p.name, ledger.ClockVirtual, start, 5, nil)
		for i := range 4 {
			r := 1.0
			if i >= 2 {
				r = p.drift
			}
			row(p.name, p.name, ledger.ClockReal, start.Add(time.Duration(i+1)*time.Hour), 5*r, &v)
		}
	}
	return l
}

// Issue 33 item 4: the HTML report shows, per profile, the prediction
// error over time (each measured row's error per metric, in time order)
// and says DRIFT, naming the metric, where the median of the recent rows
// exceeds the profile's stated error; a profile within it is not flagged.
func TestReportShowsDriftPerProfile(t *testing.T) {
	t.Parallel()
	l := driftFixture(t)
	r, err := Build(context.Background(), l, Selection{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Drift) != 2 {
		t.Fatalf("%d profiles' drift, want 2: %+v", len(r.Drift), r.Drift)
	}
	byName := map[string]ledger.Drift{}
	for _, d := range r.Drift {
		byName[d.Profile] = d
	}
	d, h := byName["drifts"], byName["holds"]
	if len(d.Points) != 4 || d.Points[0].FinishedAt.After(d.Points[3].FinishedAt) || len(d.Exceeded) != 1 || d.Exceeded[0] != "p50_tpot_ms" {
		t.Errorf("profile drifts: %d points, exceeded %v (recent %v), want 4 in time order and p50_tpot_ms", len(d.Points), d.Exceeded, d.Recent)
	}
	if len(h.Exceeded) != 0 {
		t.Errorf("profile holds (2 %% off): exceeded %v", h.Exceeded)
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<section id="drift"`, "drifts <code>drifts</code>: DRIFT on p50_tpot_ms", "holds <code>holds</code>: within its stated error",
		"30.0 %", "15.0 % DRIFT", "2.0 %"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Count(page, "DRIFT on") != 1 {
		t.Errorf("%d profiles flagged, want 1", strings.Count(page, "DRIFT on"))
	}
}

// A selection without predictions has no drift section.
func TestReportWithoutPredictionsHasNoDrift(t *testing.T) {
	t.Parallel()
	r, err := Build(context.Background(), fixture(t), Selection{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	if len(r.Drift) != 0 || strings.Contains(buf.String(), `id="drift"`) {
		t.Errorf("drift %+v; section present: %v", r.Drift, strings.Contains(buf.String(), `id="drift"`))
	}
}
