package router

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/autoinfer/autoinfer/router/policy"
)

// Target is one rank of one worker, as a routing decision names it.
type Target struct {
	URL  string
	Rank int
}

// Routed is the routing decision for one inference request made without
// HTTP (the virtual-time path): which worker serves it and, in
// prefill/decode mode, which prefill worker computes its prompt first. Its
// load is held exactly as the HTTP path holds it, through the methods below;
// the caller calls them at the virtual instants the HTTP path would reach
// the same points.
type Routed struct {
	// Worker serves the request (the decode worker in PD mode).
	Worker Target
	// PD is true when a prefill leg runs first on Prefill; false for a
	// collocated router and for PD prompts under routing_threshold.
	PD      bool
	Prefill Target
	// PrefillBody is the prefill leg's body (router/pd), when PD.
	PrefillBody []byte
	// Outcome is the serving pool's policy outcome (cache_aware's hit,
	// miss or balance).
	Outcome policy.Outcome
	// Receipt is the serving pool's route receipt (nil unless Receipts
	// turned them on).
	Receipt *Receipt

	r               *Router
	held            func(string) (int, bool) // Prompt.Held
	worker, prefill target
	pool            *Pool
	wg, pg          *guard
}

// VirtualReady reports whether the router's configuration can route
// without HTTP: its load signal must be the router's own exact counts (the
// queue signal is scraped from workers over HTTP).
func (r *Router) VirtualReady() error {
	if r.cfg.LoadSignal == LoadSignalInFlightQueue {
		return fmt.Errorf("load_signal %q reads workers' queues over HTTP: the virtual clock supports %q only", r.cfg.LoadSignal, LoadSignalInFlight)
	}
	if what := r.httpOnlyPolicy(); what != "" {
		return fmt.Errorf("%s: the virtual clock does not deliver that yet, so its decisions would be a guess", what)
	}
	return nil
}

// Route makes the decision the HTTP handler makes for an inference request
// with this body and headers on route (/v1/completions or
// /v1/chat/completions): the same request description, the same policy
// objects, decision counts and PD threshold. In PD mode the legs start as
// over HTTP (pdRouter.start: decode worker first), then the prefill worker
// is chosen, whose load is held from now until EndPrefill; otherwise the
// worker's load is held from now until End.
func (r *Router) Route(route string, header http.Header, body []byte) (*Routed, error) {
	// The driver connects from loopback: consistent_hash keys a request
	// without a session header by that address, as over HTTP.
	req := &http.Request{Method: http.MethodPost, Header: header, RemoteAddr: "127.0.0.1:1"}
	pr, apiErr := r.describe(req, body, kindInference)
	if apiErr != nil {
		return nil, apiErr
	}
	x := &Routed{r: r}
	if r.pd == nil || !pdRoutes[route] {
		return x.local(pr)
	}
	s, ok, apiErr := r.pd.start(r, body, pr)
	if apiErr != nil {
		return nil, apiErr
	}
	if s.local {
		return x.local(pr)
	}
	x.Receipt = s.receipt
	if !ok {
		return nil, errNoWorkers
	}
	x.worker, x.Outcome, x.PrefillBody = s.decode, s.outcome, s.body.Prefill()
	return x.withPrefill(pr)
}

// errNoWorkers is a pool with no worker to choose.
var errNoWorkers = errors.New("no available workers")

// start picks from x.pool and holds the worker's load (an attempt starts).
func (x *Routed) start(pr policy.Request) (*Routed, error) {
	t, d, ok := x.r.choose(x.pool, nil, pr)
	if !ok {
		return nil, errNoWorkers
	}
	x.worker, x.Outcome, x.Receipt = t, d.Outcome, x.heldBy(d.Receipt)
	x.Worker = t.public()
	x.wg = x.pool.acquire(t)
	return x, nil
}

// EndPrefill releases the prefill worker's load (its answer arrived) and
// holds the decode worker's (the decode leg starts), as the HTTP path does.
func (x *Routed) EndPrefill() {
	if x.pg != nil {
		x.pg.Release()
	}
	if x.wg == nil {
		x.wg = x.pool.acquire(x.worker)
	}
}

// End releases every load the request still holds.
func (x *Routed) End() {
	if x.pg != nil {
		x.pg.Release()
	}
	if x.wg != nil {
		x.wg.Release()
	}
}

func (t target) public() Target { return Target{URL: t.w.url, Rank: t.rank} }
