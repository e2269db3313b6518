package adapter

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// TestSweepKneeSaysWhatItMeans: the knee is the highest ok rate meeting the
// SLOs, and the note says whether the next rate missed, failed, or none
// was faster; a failed row never meets, whatever its attainment.
func TestSweepKneeSaysWhatItMeans(t *testing.T) {
	ok := Outcome{Status: ledger.StatusOK}
	failed := Outcome{Status: ledger.StatusFailed, Failure: failure.DriverOverloaded{P99ScheduleDelayMs: 200, ThresholdMs: 100}}
	pt := func(o Outcome, rate, att float64) SweepPoint {
		return SweepPoint{Outcome: o, Role: "rate", Rate: rate, Attainment: att, Meets: o.Status == ledger.StatusOK && att >= 0.9}
	}
	head := []SweepPoint{{Outcome: ok, Role: "synchronous", Attainment: 1, Meets: true}, {Outcome: ok, Role: "throughput"}}
	cases := []struct {
		name string
		pts  []SweepPoint
		knee int
		note string
	}{
		{"inside", []SweepPoint{pt(ok, 2, 1), pt(ok, 4, 0.95), pt(ok, 6, 0.5)}, 3, "the next rate, 6 req/s, had 50.0%"},
		{"at the top", []SweepPoint{pt(ok, 2, 1), pt(ok, 4, 0.95)}, 3, "the highest rate swept"},
		{"next failed", []SweepPoint{pt(ok, 2, 1), pt(failed, 4, 1)}, 2, "failed (DriverOverloaded)"},
		{"none", []SweepPoint{pt(ok, 2, 0.5), pt(ok, 4, 0.1)}, -1, "the knee lies below 2 req/s"},
	}
	for _, c := range cases {
		k, note := sweepKnee(append(append([]SweepPoint{}, head...), c.pts...), 0.9)
		if k != c.knee || !strings.Contains(note, c.note) {
			t.Errorf("%s: knee %d (%s), want %d (%s)", c.name, k, note, c.knee, c.note)
		}
	}
}
