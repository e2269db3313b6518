package search

import (
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/trials"
)

func cand(name string, row int64) Candidate {
	return Candidate{Trial: trials.Trial{Spec: trials.Spec{Name: name}}, RowID: row, Status: ledger.StatusOK}
}

// TestPickSpreadsAlongTheFront: top-k takes the first k; a front gives
// both ends and points between.
func TestPickSpreadsAlongTheFront(t *testing.T) {
	var front []Candidate
	for i := range 7 {
		front = append(front, cand(string(rune('a'+i)), int64(i+1)))
	}
	names := func(cs []Candidate) string {
		var b strings.Builder
		for _, c := range cs {
			b.WriteString(c.Trial.Name)
		}
		return b.String()
	}
	for _, c := range []struct {
		r    Ranked
		k    int
		want string
	}{
		{Ranked{Top: front}, 3, "abc"},
		{Ranked{Front: front}, 3, "adg"},
		{Ranked{Front: front}, 1, "a"},
		{Ranked{Front: front[:2]}, 3, "ab"},
		{Ranked{Top: front[:2]}, 3, "ab"},
	} {
		if got := names(Pick(c.r, c.k)); got != c.want {
			t.Errorf("Pick(%d of top %d, front %d) = %s, want %s", c.k, len(c.r.Top), len(c.r.Front), got, c.want)
		}
	}
}

// TestWinnerSaysWhenMeasurementsReorder: the predicted best measured
// worse than another confirmation is named; a refused one is not counted.
func TestWinnerSaysWhenMeasurementsReorder(t *testing.T) {
	s := Spec{Objective: Objective{Maximize: "output_throughput"}}
	r := Ranked{Metrics: rankMetrics(s)}
	conf := func(c Candidate, predicted, measured float64, status ledger.Status) Confirmed {
		return Confirmed{Candidate: c, Pair: ledger.Prediction{Measured: ledger.Trial{Status: status}},
			Errors: []ledger.MetricError{ledger.NewMetricError("output_throughput", predicted, measured)}}
	}
	a, b := cand("a", 1), cand("b", 2)
	if got := Winner(s, r, []Confirmed{conf(a, 100, 101, ledger.StatusOK), conf(b, 90, 91, ledger.StatusOK)}); got != "" {
		t.Errorf("same order: %q, want no note", got)
	}
	got := Winner(s, r, []Confirmed{conf(a, 100, 80, ledger.StatusOK), conf(b, 90, 91, ledger.StatusOK)})
	if !strings.Contains(got, "confirmed winner differs") || !strings.Contains(got, "b measured best") {
		t.Errorf("reordered: %q, want a note naming b", got)
	}
	if got := Winner(s, r, []Confirmed{conf(a, 100, 80, ledger.StatusOK), conf(b, 100, 91, ledger.StatusOK)}); got != "" {
		t.Errorf("predicted equal: %q, want no note (no predicted order)", got)
	}
	if got := Winner(s, r, []Confirmed{conf(a, 100, 80, ledger.StatusOK), conf(b, 90, 91, ledger.StatusFailed)}); got != "" {
		t.Errorf("the better one refused: %q, want no note (one counted confirmation)", got)
	}
}
