package target

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
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
		{Topology{Replicas: -1}, "negative"},
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

func TestHealthReportsLastProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := Health{Interval: time.Millisecond}.Wait(ctx, srv.URL+"/health", nil)
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error") {
		t.Errorf("err = %v, want the last probe's status", err)
	}

	stop := make(chan struct{})
	close(stop)
	err = Health{}.Wait(t.Context(), srv.URL+"/health", stop)
	if err == nil || !strings.Contains(err.Error(), "stopped waiting") {
		t.Errorf("stopped wait: err = %v", err)
	}
}

// A probe that ctx cuts short does not replace the reason the worker gave
// before (vLLM answering 503 while it loads, then a probe in flight at the
// deadline).
func TestHealthKeepsReasonOverCutProbe(t *testing.T) {
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probes.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		<-r.Context().Done() // hang until the prober gives up
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := Health{Interval: time.Millisecond}.Wait(ctx, srv.URL+"/health", nil)
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") {
		t.Errorf("err = %v, want the 503 of the last probe that finished", err)
	}
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
