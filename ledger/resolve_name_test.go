package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testNameMeansTheMeasurement: a real-time trial's virtual replay is a row
// of the same name recorded after it. A name resolves to the real row when
// there is one, and a failed real trial's name resolves to nothing rather
// than to its prediction; a name with only virtual rows still resolves.
func testNameMeansTheMeasurement(t *testing.T, be backend) {
	l, _ := be.open(t)
	ctx := context.Background()
	record := func(name string, status Status, virtual bool, at time.Duration) int64 {
		t.Helper()
		tr := trial(name, routerRR)
		tr.Status = status
		if status == StatusFailed {
			tr.Failure = failureSample()
		}
		tr.StartedAt = tr.StartedAt.Add(at)
		tr.FinishedAt = tr.StartedAt.Add(time.Minute)
		if virtual {
			tr.Identity = virtualIdentity("fast")
		}
		r, err := l.Record(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	// The replay is recorded first and starts later (after the trial).
	record("measured", StatusOK, true, 2*time.Minute)
	measured := record("measured", StatusOK, false, time.Minute)
	record("refused", StatusOK, true, 4*time.Minute)
	record("refused", StatusFailed, false, 3*time.Minute)
	predicted := record("predicted", StatusOK, true, 5*time.Minute)

	if s, err := l.Resolve(ctx, "measured"); err != nil || len(s.IDs) != 1 || s.IDs[0] != measured {
		t.Errorf("measured: %v %v, want the real row %d", s.IDs, err, measured)
	}
	if s, err := l.Resolve(ctx, "refused"); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused: %v %v, want not found (the real trial failed; its replay is no measurement)", s.IDs, err)
	}
	if s, err := l.Resolve(ctx, "predicted"); err != nil || len(s.IDs) != 1 || s.IDs[0] != predicted {
		t.Errorf("predicted: %v %v, want the virtual row %d", s.IDs, err, predicted)
	}
}
