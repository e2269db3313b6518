// Package routertest starts routers and fake workers for tests and sends
// them requests, over loopback TCP or over an in-memory network inside a
// testing/synctest bubble. It does not import the router package (a router
// is anything with Serve and Loads), so the router's own internal tests use
// it too. Simulated vLLM engines come from target/sim/simtest.
//
// # Serving a router
//
//	r, err := router.New(cfg)                  // cfg.WorkerURLs from the workers below
//	base := routertest.Serve(t, r)             // "http://127.0.0.1:port"
//
// Serve runs the router until the test ends; its cleanup fails the test
// unless every load went back to 0 and Serve returned cleanly. ServeOn does
// the same on a given listener. WaitLoadsZero is that check on its own.
//
// # Sending requests
//
//	c := routertest.NewClient(t)               // own pool, no proxy, closed at cleanup
//	res := c.Post(base+"/v1/completions", `{"prompt":"x"}`, "X-Request-Id", "id-1")
//	res.Status, res.Body, res.Header           // the whole answer
//	res.ErrorType()                            // the OpenAI error type, "" if none
//	res.Err                                    // reading the body failed: a stream cut off
//	ch := c.Go(ctx, "POST", url, body)         // in the background; never touches t
//	resp, err := c.Send(ctx, "POST", url, body) // the open response, to read a stream
//
// Call, Get and Post fail the test on transport errors; Go and Send return
// them. Headers are name, value pairs. ErrorType works on any body.
//
// # Fake workers
//
// StartWorker (loopback) and StartWorkerOn (a listener) serve a Worker: an
// OpenAI-shaped upstream steered per request by X-Fake-* headers (hold,
// sleep, fail with a status, break a stream; see Worker) and per worker by
// FailStatus and Stall, counting Requests, Probes and Cancelled requests.
// Release lets held requests go; Close kills the worker.
//
// # Timers: synctest bubbles
//
// Retry backoff, circuit-breaker windows, health-check intervals and
// request and prefill timeouts are tested on synctest's fake clock rather
// than against the wall clock. A bubble's clock only advances when every
// goroutine in it is durably blocked, which a goroutine reading a real
// socket never is, so everything talks over a Network of net.Pipe
// connections instead:
//
//	synctest.Test(t, func(t *testing.T) {
//		n := routertest.NewNetwork()
//		ln, _ := n.Listen("")
//		w := routertest.StartWorkerOn(t, ln)
//		r, _ := router.New(cfg, router.WithDialer(n)) // cfg.WorkerURLs = []string{w.URL}
//		rln, _ := n.Listen("")
//		base := routertest.ServeOn(t, r, rln)
//		res := n.Client(t).Post(base+"/v1/completions", body)
//		synctest.Wait() // every handler has returned: loads and metrics are final
//	})
//
// Inside a bubble a 30 s timeout takes no real time and fires exactly when
// the fake clock reaches it, however loaded the machine is. Eventually also
// works there (its sleeps are fake), but synctest.Wait followed by a direct
// check is deterministic.
package routertest
