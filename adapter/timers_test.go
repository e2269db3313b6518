package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// roundTripFunc answers requests without a network, so the runner's waits
// run on a synctest bubble's clock.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(r *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// loadsRunner is a trial run whose router answers /get_loads with the
// load of the n-th poll.
func loadsRunner(load func(n int64) float64) (*trialRun, *atomic.Int64) {
	var polls atomic.Int64
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body := fmt.Sprintf(`{"workers":[{"worker":"http://w0","load":%g},{"worker":"http://w1","load":0}]}`, load(polls.Add(1)))
		return answer(r, http.StatusOK, body), nil
	})}
	tr := &trialRun{Runner: &Runner{log: slog.New(slog.DiscardHandler), client: client},
		router: &runningRouter{URL: "http://router"}}
	return tr, &polls
}

// The loads are read again until they are 0: a decrement may trail the
// last response.
func TestDrainedLoadsWaitsForZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr, polls := loadsRunner(func(n int64) float64 { return float64(max(3-n, 0)) })
		start := time.Now()
		loads := tr.drainedLoads(t.Context())
		if !allZero(loads) || len(loads) != 2 || polls.Load() != 3 {
			t.Errorf("loads %v after %d polls, want zeros on the third", loads, polls.Load())
		}
		if waited := time.Since(start); waited != 20*time.Millisecond {
			t.Errorf("waited %v, want two 10ms poll gaps", waited)
		}
	})
}

// A load that never returns to 0 is reported as last read once the drain
// timeout has passed: the classifier makes it a RouterPolicyInvariant.
func TestDrainedLoadsGivesUpAfterDrainTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr, _ := loadsRunner(func(int64) float64 { return 1 })
		start := time.Now()
		loads := tr.drainedLoads(t.Context())
		if loads["http://w0"] != 1 {
			t.Errorf("loads %v, want the leaked load of w0", loads)
		}
		if waited := time.Since(start); waited != drainTimeout {
			t.Errorf("gave up after %v, want the %v drain timeout", waited, drainTimeout)
		}
	})
}

// A router that never has a healthy worker fails its start after the
// start timeout with the last answer; one that stops serving ends the wait
// at once.
func TestWaitReadyBounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		notReady := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return answer(r, http.StatusServiceUnavailable, ""), nil
		})}
		start := time.Now()
		err := waitReady(t.Context(), notReady, "http://router", nil)
		if err == nil || !strings.Contains(err.Error(), "readiness answered 503") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the deadline and the last answer", err)
		}
		if waited := time.Since(start); waited != routerStartTimeout {
			t.Errorf("gave up after %v, want %v", waited, routerStartTimeout)
		}

		died := make(chan error, 1)
		died <- errors.New("listener closed")
		start = time.Now()
		err = waitReady(t.Context(), notReady, "http://router", died)
		if err == nil || !strings.Contains(err.Error(), "router stopped while starting: listener closed") || time.Since(start) != 0 {
			t.Errorf("err = %v after %v, want the router's end at once", err, time.Since(start))
		}
	})
}
