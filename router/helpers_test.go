package router

import (
	"net"
	"testing"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// env is where a test's workers and router run and how it reaches them:
// loopback TCP, or an in-memory network inside a testing/synctest bubble
// for tests of timer-driven logic.
type env struct {
	t   testing.TB
	net *routertest.Network // nil: loopback TCP
	*routertest.Client
}

// loopback is an env on 127.0.0.1.
func loopback(t testing.TB) *env {
	return &env{t: t, Client: routertest.NewClient(t)}
}

// bubble is an env on an in-memory network; call it inside synctest.Test.
// Timeouts, backoffs and intervals then run on the bubble's fake clock.
func bubble(t *testing.T) *env {
	n := routertest.NewNetwork()
	return &env{t: t, net: n, Client: n.Client(t)}
}

// listen is a new address on the env's network: a pipe listener in a
// bubble, a 127.0.0.1 port on loopback.
func (e *env) listen() net.Listener {
	e.t.Helper()
	var ln net.Listener
	var err error
	if e.net != nil {
		ln, err = e.net.Listen("")
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return ln
}

// worker starts a fake worker (routertest.Worker) that stops with the test.
func (e *env) worker() *routertest.Worker {
	e.t.Helper()
	if e.net == nil {
		return routertest.StartWorker(e.t)
	}
	return routertest.StartWorkerOn(e.t, e.listen())
}

// router serves a router seeded with 1 for the test's lifetime. Its cleanup
// checks that every load returned to 0 — every test doubles as a
// load-accounting check — and that Serve stopped cleanly.
func (e *env) router(cfg Config, opts ...Option) (*Router, string) {
	e.t.Helper()
	opts = append([]Option{WithSeed(1)}, opts...)
	if e.net != nil {
		opts = append(opts, WithDialer(e.net))
	}
	r, err := New(cfg, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.net == nil {
		return r, routertest.Serve(e.t, r)
	}
	return r, routertest.ServeOn(e.t, r, e.listen())
}

// testConfig is the default config over workers with short backoffs. Health
// checks keep their default 10 s interval: only tests about health checking
// shorten it, so no other test depends on how fast a probe is answered.
func testConfig(policyName string, workers ...string) Config {
	c := DefaultConfig()
	c.Policy = policyName
	c.WorkerURLs = workers
	c.Retry.InitialBackoffMs = 1
	c.Retry.MaxBackoffMs = 5
	return c
}

// testAdminKey enables the admin routes of a test's router (withAdmin);
// requests send it with the adminAuth header pair.
const testAdminKey = "test-admin-key"

func withAdmin() Option { return WithSecrets(Secrets{AdminAPIKey: testAdminKey}) }

var adminAuth = []string{"Authorization", "Bearer " + testAdminKey}

// urlsOf lists fake workers' URLs.
func urlsOf(ws ...*routertest.Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.URL
	}
	return out
}
