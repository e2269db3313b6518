package router

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// Issue 35, acceptance 3: a router started before its workers is not
// ready and answers 503 no_available_workers at once (no attempt is made
// on a worker never seen up); once the engines' health endpoints answer,
// the first completion succeeds within 2 s (the startup probes run every
// StartupProbeInterval until a worker first answers).
func TestAcceptanceRouterStartedBeforeItsWorkers(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(2)
	for _, w := range ws {
		w.Stop()
	}
	r, base := e.router(testConfig("round_robin", urls(ws)...))

	if res := e.Get(base + "/readiness"); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("readiness with no worker up: %d %s, want 503", res.Status, res.Body)
	}
	for i := range 3 {
		res := e.Post(base+"/v1/completions", completion("early", 2, false))
		if res.Status != http.StatusServiceUnavailable || res.ErrorType() != ErrTypeNoAvailableWorkers {
			t.Fatalf("completion %d before the workers: %d %s, want 503 no_available_workers", i, res.Status, res.Body)
		}
	}
	if n := processedBy(r, ws); n[ws[0].URL]+n[ws[1].URL] != 0 {
		t.Fatalf("attempts were made on workers never seen up: %v", n)
	}

	for _, w := range ws {
		w.Restart()
	}
	routertest.Eventually(t, hangBound, func() error {
		for _, w := range ws {
			res, err := e.Send(context.Background(), http.MethodGet, w.URL+"/health", "")
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("%s/health: %d", w.URL, res.StatusCode)
			}
		}
		return nil
	})
	up := time.Now() // both health endpoints answer
	routertest.Eventually(t, hangBound, func() error {
		if res := e.Post(base+"/v1/completions", completion("late", 2, false)); res.Status != http.StatusOK {
			return fmt.Errorf("completion: %d %s", res.Status, res.Body)
		}
		return nil
	})
	took := time.Since(up)
	t.Logf("first completion %v after the engines' health endpoints answered", took)
	if took > 2*time.Second {
		t.Errorf("first completion %v after the engines came up, want within 2 s", took)
	}
	if res := e.Get(base + "/readiness"); res.Status != http.StatusOK {
		t.Errorf("readiness after the workers came up: %d %s", res.Status, res.Body)
	}
}
