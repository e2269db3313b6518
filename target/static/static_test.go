package static

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/autoinfer/autoinfer/target"
)

func healthy(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProvisionHealthyPD(t *testing.T) {
	p0, d0, d1 := healthy(t), healthy(t), healthy(t)
	prov := New(Options{Prefill: []string{p0.URL + "/"}, Decode: []string{d0.URL, d1.URL}})
	d, err := prov.Provision(t.Context(), target.Topology{Prefill: 1, Decode: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.URLs(target.Prefill); !slices.Equal(got, []string{p0.URL}) {
		t.Errorf("prefill = %v (trailing slash must be trimmed)", got)
	}
	if got := d.URLs(target.Decode); !slices.Equal(got, []string{d0.URL, d1.URL}) {
		t.Errorf("decode = %v", got)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
	// Close must not have touched the workers.
	if resp, err := http.Get(d0.URL + "/health"); err != nil {
		t.Errorf("worker gone after Close: %v", err)
	} else {
		resp.Body.Close()
	}
}

// roundTripFunc answers probes without a network, so the health timeout
// runs on a synctest bubble's clock.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestUnhealthyWorkerIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const good, bad = "http://good:8000", "http://bad:8000"
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			code := http.StatusOK
			if r.URL.Host == "bad:8000" {
				code = http.StatusServiceUnavailable
			}
			return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Body: http.NoBody, Request: r}, nil
		})}
		prov := New(Options{Workers: []string{good, bad}, HealthTimeout: 200 * time.Millisecond, Client: client})
		start := time.Now()
		_, err := prov.Provision(t.Context(), target.Topology{Replicas: 2})
		if waited := time.Since(start); waited != 200*time.Millisecond {
			t.Errorf("gave up after %v, want the 200ms health timeout", waited)
		}
		var se *target.StartupError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want *target.StartupError", err)
		}
		if se.Worker.URL != bad || se.Worker.Rank != 1 {
			t.Errorf("named worker %s, want rank 1 %s", se.Worker, bad)
		}
		if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), good+":") {
			t.Errorf("error text = %v", err)
		}
	})
}

func TestCountMismatch(t *testing.T) {
	_, err := New(Options{Workers: []string{"http://127.0.0.1:1"}}).Provision(t.Context(), target.Topology{Replicas: 2})
	if err == nil || !strings.Contains(err.Error(), "wants 2 collocated workers, 1 URLs given") {
		t.Errorf("err = %v", err)
	}
}

func TestRestartUnsupported(t *testing.T) {
	w := healthy(t)
	d, err := New(Options{Workers: []string{w.URL}}).Provision(t.Context(), target.Topology{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(t.Context(), 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Restart = %v, want errors.ErrUnsupported", err)
	}
}
