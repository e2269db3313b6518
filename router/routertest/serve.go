package routertest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// Router is what Serve needs of a router; *router.Router implements it.
// routertest does not import the router package, so the router's own
// internal tests can use it without an import cycle.
type Router interface {
	Serve(ctx context.Context, ln net.Listener) error
	Loads() map[string]int64
}

// Serve runs r on a new 127.0.0.1 port until the test ends and returns its
// base URL ("http://127.0.0.1:port").
func Serve(t testing.TB, r Router) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("routertest: listen: %v", err)
	}
	return ServeOn(t, r, ln)
}

// ServeOn runs r on ln (a Network listener inside a synctest bubble) until
// the test ends and returns its base URL. At cleanup it checks that every
// load went back to 0 — so every test doubles as a load-accounting check —
// then cancels Serve and fails the test if Serve returned an error.
func ServeOn(t testing.TB, r Router, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		// Serve is stopped even when loads are stuck, so a failed test
		// leaves no goroutine behind (inside a bubble that would be a
		// deadlock panic hiding the failure).
		err := poll(5*time.Second, func() error { return loadsZero(r) })
		cancel()
		if err != nil {
			t.Errorf("routertest: at cleanup: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("routertest: Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// WaitLoadsZero polls until every load of r is 0. A response can reach the
// client a moment before the router's handler returns and releases its load.
func WaitLoadsZero(t testing.TB, r Router) {
	t.Helper()
	Eventually(t, 5*time.Second, func() error { return loadsZero(r) })
}

func loadsZero(r Router) error {
	for url, n := range r.Loads() {
		if n != 0 {
			return fmt.Errorf("load of %s is %d, want 0 (all loads %v)", url, n, r.Loads())
		}
	}
	return nil
}

// Eventually polls cond every 5 ms until it returns nil, and fails the test
// with cond's last error once within has passed. It waits for a state to be
// reached (readiness), never for a duration to pass. Inside a synctest
// bubble the clock is fake: each poll runs once every other goroutine is
// blocked, so the outcome does not depend on the machine's speed; there,
// synctest.Wait followed by a direct check says the same more plainly.
func Eventually(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	if err := poll(within, cond); err != nil {
		t.Fatal(err)
	}
}

// poll runs cond every 5 ms until it returns nil or within has passed.
func poll(within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s: %w", within, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
