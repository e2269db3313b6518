package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTopologyValidateAndSlots(t *testing.T) {
	for _, tc := range []struct {
		topo Topology
		err  string
	}{
		{Topology{Replicas: 2}, ""},
		{Topology{Prefill: 2, Decode: 6}, ""},
		{Topology{}, "at least one worker"},
		{Topology{Replicas: 1, Prefill: 1, Decode: 1}, "mutually exclusive"},
		{Topology{Prefill: 1}, "at least one worker of each role"},
		{Topology{Replicas: -1}, "topology.replicas: must be ≥ 0 (got -1)"},
	} {
		err := tc.topo.Validate()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err = %v, want %q", tc.topo, err, tc.err)
		}
	}
	slots := Topology{Prefill: 2, Decode: 1}.Slots()
	want := []Worker{{Role: Prefill, Rank: 0}, {Role: Prefill, Rank: 1}, {Role: Decode, Rank: 0}}
	if !slices.Equal(slots, want) {
		t.Errorf("slots = %+v, want %+v", slots, want)
	}
}

func TestHealthWaitsForOK(t *testing.T) {
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if probes.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := (Health{Interval: time.Millisecond}).Wait(ctx, srv.URL+"/health", nil); err != nil {
		t.Fatal(err)
	}
	if got := probes.Load(); got != 3 {
		t.Errorf("probes = %d, want 3 (two 503s, then 200)", got)
	}
}

// roundTripFunc answers requests without a network, for timer tests in a
// synctest bubble (real sockets do not block durably there).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// status answers every probe with code.
func status(code int) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
			Body: http.NoBody, Request: r}, nil
	})}
}

// The wait ends at ctx's deadline with the last probe's answer, after
// probes spaced by a gap that doubles up to 250 ms.
func TestHealthReportsLastProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int32
		client := status(http.StatusInternalServerError)
		inner := client.Transport
		client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) { probes.Add(1); return inner.RoundTrip(r) })
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		err := Health{Client: client, Interval: 10 * time.Millisecond}.Wait(ctx, "http://w/health", nil)
		if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error") {
			t.Errorf("err = %v, want the last probe's status", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("waited %v, want exactly the 1s deadline", waited)
		}
		// Probes at 0, 10, 30, 70, 150, 310 (gap capped at 250), 560, 810 ms.
		if got := probes.Load(); got != 8 {
			t.Errorf("%d probes in 1s, want 8", got)
		}
	})
}

// A closed stop channel ends the wait at once.
func TestHealthStopsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		err := Health{Client: status(http.StatusServiceUnavailable)}.Wait(t.Context(), "http://w/health", stop)
		if err == nil || !strings.Contains(err.Error(), "stopped waiting") {
			t.Errorf("stopped wait: err = %v", err)
		}
	})
}

// A probe that ctx cuts short does not replace the reason the worker gave
// before (vLLM answering 503 while it loads, then a probe in flight at the
// deadline).
func TestHealthKeepsReasonOverCutProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int32
		answer503 := status(http.StatusServiceUnavailable).Transport
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if probes.Add(1) == 1 {
				return answer503.RoundTrip(r)
			}
			<-r.Context().Done() // hang until the prober gives up
			return nil, r.Context().Err()
		})}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := Health{Client: client, Interval: time.Millisecond}.Wait(ctx, "http://w/health", nil)
		if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") {
			t.Errorf("err = %v, want the 503 of the last probe that finished", err)
		}
	})
}

func TestStartupErrorText(t *testing.T) {
	err := &StartupError{
		Worker: Worker{Role: Decode, Rank: 1, URL: "http://127.0.0.1:9", LogPath: "/tmp/d1.log"},
		Reason: "exited during startup", Err: errors.New("exit status 1"), LogTail: "CUDA out of memory\n",
	}
	want := "worker decode[1] http://127.0.0.1:9: exited during startup: exit status 1\n--- last lines of /tmp/d1.log ---\nCUDA out of memory"
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err.Error(), want)
	}
}
