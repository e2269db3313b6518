package virtual

import (
	"container/heap"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/sim"
)

// Worker is one simulated worker of a virtual deployment: the name the
// router knows it by (its URL in a real run) and its engine options.
type Worker struct {
	URL     string
	Options sim.Options
}

// Deployment is a deployment in virtual time: the router's own decision
// code (a *router.Router that never serves HTTP) in front of simulated
// engines on one discrete-event clock (sim.Fleet). It implements
// driver.System.
type Deployment struct {
	fleet   *sim.Fleet
	router  *router.Router // nil: one worker, no router
	dp      int            // the router's ranks per worker (X-data-parallel-rank)
	workers map[string]int // URL → fleet worker
	rr      []int          // per worker: round-robin rank when no rank is named

	reqs      map[int]*request // by fleet tag
	routed    map[int]*request // by driver id: requests holding router loads
	transfers transfers        // KV pulls in flight (PD)
	nextID    int
	shapes    map[string]*shapes // the token path's, by shell

	kv         *kvFeed       // KV event batches (kvevents.go)
	evictEvery time.Duration // 0: no stateful policy to trim
	nextEvict  time.Duration

	done     func(driver.Answer) // set while Complete runs
	record   func(Decision)      // --record-decisions, nil: off
	receipts bool                // RecordReceipts: decisions carry receipts
}

// The driver's contracts a Deployment keeps, the optional one included.
var (
	_ driver.System    = (*Deployment)(nil)
	_ driver.Canceller = (*Deployment)(nil)
	_ driver.Windowed  = (*Deployment)(nil)
)

// request is one client request inside the deployment.
type request struct {
	id      int // the driver's id
	routed  *router.Routed
	serving int // fleet worker serving the tokens
	prefill int // fleet worker and rank of the prefill leg (PD)
	pRank   int
	body    []byte
	prompt  *promptLegs // the token path's legs (nil: body)
	route   string
	tokens  []time.Duration
	// cancelled: the client dropped it (Cancel); its legs run on, but no
	// decode leg follows its prefill.
	cancelled bool
}

// New builds a deployment over workers; rcfg is the router's configuration
// with the workers' URLs filled in (nil: no router, a single worker).
func New(workers []Worker, rcfg *router.Config, seed uint64) (*Deployment, error) {
	d := &Deployment{workers: map[string]int{}, reqs: map[int]*request{}, routed: map[int]*request{}, dp: 1}
	opts := make([]sim.Options, len(workers))
	for i, w := range workers {
		opts[i] = w.Options
		d.workers[w.URL] = i
	}
	f, err := sim.NewFleet(opts, d)
	if err != nil {
		return nil, err
	}
	d.fleet, d.rr = f, make([]int, len(workers))
	if rcfg == nil {
		if len(workers) != 1 {
			return nil, fmt.Errorf("virtual deployment: %d workers need a router", len(workers))
		}
		d.followKVEvents(workers)
		return d, nil
	}
	r, err := router.New(*rcfg, router.WithSeed(seed))
	if err != nil {
		return nil, err
	}
	if err := r.VirtualReady(); err != nil {
		return nil, fmt.Errorf("router.%w", err)
	}
	d.router, d.dp = r, max(rcfg.IntraNodeDataParallelSize, 1)
	d.evictEvery = r.EvictionInterval()
	d.nextEvict = d.evictEvery
	d.followKVEvents(workers)
	return d, nil
}

// OpenWindow starts the measured window of the engines' counts.
func (d *Deployment) OpenWindow() { d.fleet.OpenWindow() }

// EngineWindow is one worker's window counts.
type EngineWindow struct {
	URL string
	sim.WindowCounts
}

// Window is what each worker's engines counted since OpenWindow, in the
// workers' order.
func (d *Deployment) Window() []EngineWindow {
	counts := d.fleet.Window()
	out := make([]EngineWindow, len(counts))
	for url, w := range d.workers {
		out[w] = EngineWindow{URL: url, WindowCounts: counts[w]}
	}
	return out
}

// Router is the deployment's router (nil without one): its metrics hold
// the decision counts as a served router's do.
func (d *Deployment) Router() *router.Router { return d.router }

// Fleet is the deployment's engines.
func (d *Deployment) Fleet() *sim.Fleet { return d.fleet }

// Next is the earliest engine step end, KV transfer completion or KV event
// batch arrival at the router.
func (d *Deployment) Next() (time.Duration, bool) {
	at, ok := d.fleet.Next()
	if len(d.transfers) > 0 && (!ok || d.transfers[0].at < at) {
		at, ok = d.transfers[0].at, true
	}
	return d.kv.next(at, ok)
}

// Complete applies the events at at: policy eviction ticks up to at, KV
// event batches due at the router (in publish order), step ends (in rank
// order), then finished KV transfers (in start order).
func (d *Deployment) Complete(at time.Duration, done func(driver.Answer)) error {
	d.done = done
	defer func() { d.done = nil }()
	for d.evictEvery > 0 && d.nextEvict <= at {
		d.router.Evict()
		d.nextEvict += d.evictEvery
	}
	d.kv.arrive(d.router, at)
	if err := d.fleet.Complete(at); err != nil {
		return err
	}
	for len(d.transfers) > 0 && d.transfers[0].at <= at {
		x := heap.Pop(&d.transfers).(transfer)
		if err := d.landed(x, at); err != nil {
			return err
		}
	}
	return nil
}

// Plan starts engine steps on what arrived.
func (d *Deployment) Plan() { d.fleet.Plan() }

// Send routes the request with the router's decision code and submits its
// first leg to the chosen engine.
func (d *Deployment) Send(id int, route string, header http.Header, body []byte, at time.Duration) error {
	return d.send(&request{id: id, body: body, route: route}, header, body, at)
}

// send routes rq, whose body is body, and submits its first leg.
func (d *Deployment) send(rq *request, header http.Header, body []byte, at time.Duration) error {
	if d.router == nil {
		rq.serving = 0
		return d.submit(rq, rq.serving, d.nextRank(0, router.Target{}), body, false, false, at)
	}
	x, err := d.router.Route(rq.route, header, body)
	if err != nil {
		return err
	}
	if h := d.held(sim.FleetRequest{Body: body, Chat: rq.route == "/v1/chat/completions"}); h != nil && x.Receipt != nil {
		x.Receipt.SetHeldBy(h)
	}
	return d.start(rq, header, x, body, at)
}

// start submits the first leg of rq, whose body is body, as the router
// decided in x.
func (d *Deployment) start(rq *request, header http.Header, x *router.Routed, body []byte, at time.Duration) (err error) {
	id := rq.id
	rq.routed = x
	d.routed[id] = rq
	if rq.serving, err = d.worker(x.Worker.URL); err != nil {
		delete(d.routed, id)
		x.End()
		return err
	}
	if d.record != nil {
		d.record(decisionOf(id, header, x))
	}
	if !x.PD {
		return d.submit(rq, rq.serving, d.nextRank(rq.serving, x.Worker), body, false, false, at)
	}
	if rq.prefill, err = d.worker(x.Prefill.URL); err != nil {
		delete(d.routed, id)
		x.End()
		return err
	}
	rq.pRank = d.nextRank(rq.prefill, x.Prefill)
	return d.submit(rq, rq.prefill, rq.pRank, x.PrefillBody, true, false, at)
}

func (d *Deployment) worker(url string) (int, error) {
	w, ok := d.workers[url]
	if !ok {
		return 0, fmt.Errorf("router chose %q, which is no worker of the deployment", url)
	}
	return w, nil
}

// nextRank is the engine rank serving a request the router sent to t: the
// rank it names when the router addresses ranks, else the worker's own
// round-robin (as sim.Server.pickRank).
func (d *Deployment) nextRank(w int, t router.Target) int {
	if d.dp > 1 {
		return t.Rank
	}
	n := d.fleet.Ranks(w)
	r := d.rr[w] % n
	d.rr[w]++
	return r
}

// submit hands one leg to a fleet engine; the fleet tag is even for the
// serving leg, odd for a prefill leg.
func (d *Deployment) submit(rq *request, w, rank int, body []byte, prefill, pulled bool, at time.Duration) error {
	tag := 2 * d.nextID
	if prefill {
		tag++
	}
	d.nextID++
	fr := sim.FleetRequest{Worker: w, Rank: rank, Tag: tag, ID: "v-" + strconv.Itoa(tag), Body: body,
		Chat: rq.route == "/v1/chat/completions", Pulled: pulled}
	if rq.prompt != nil {
		rq.prompt.leg(&fr, prefill)
	}
	err := d.fleet.Submit(fr, at)
	if err != nil {
		if rq.routed != nil {
			delete(d.routed, rq.id)
			rq.routed.End()
		}
		return err
	}
	d.reqs[tag] = rq
	return nil
}

// Token records a serving leg's token.
func (d *Deployment) Token(tag int, at time.Duration) {
	if tag%2 == 0 {
		rq := d.reqs[tag]
		rq.tokens = append(rq.tokens, at)
	}
}

// Finished ends a leg: a prefill leg starts its KV transfer, a serving leg
// answers the driver.
func (d *Deployment) Finished(tag int, f sim.FleetFinish) {
	rq := d.reqs[tag]
	delete(d.reqs, tag)
	if tag%2 == 1 {
		if !rq.cancelled {
			rq.routed.EndPrefill()
		}
		heap.Push(&d.transfers, transfer{at: f.At + d.fleet.TransferTime(rq.serving, f.PromptTokens), seq: d.nextID,
			rq: rq, held: f.Held, tag: tag})
		d.nextID++
		return
	}
	if rq.routed != nil {
		delete(d.routed, rq.id)
		rq.routed.End()
	}
	d.done(driver.Answer{ID: rq.id, Tokens: rq.tokens, PromptTokens: f.PromptTokens, CachedTokens: f.CachedTokens})
}

// Cancel releases the router loads request id holds, as the HTTP
// router's do when the client disconnects; its engines finish its work.
func (d *Deployment) Cancel(id int) {
	if rq, ok := d.routed[id]; ok {
		delete(d.routed, id)
		rq.cancelled = true
		rq.routed.End()
	}
}

// landed completes a KV transfer: the prefill engine frees the held KV and
// the decode engine takes the request without recomputing its prompt.
func (d *Deployment) landed(x transfer, at time.Duration) error {
	rq := x.rq
	if x.held {
		if _, err := d.fleet.ReleaseHeld(rq.prefill, rq.pRank, "v-"+strconv.Itoa(x.tag), at); err != nil {
			return err
		}
	}
	if rq.cancelled {
		return nil
	}
	return d.submit(rq, rq.serving, d.nextRank(rq.serving, rq.routed.Worker), rq.body, false, x.held, at)
}

// transfer is a KV pull in flight; transfers order by end, then start.
type transfer struct {
	at   time.Duration
	seq  int
	rq   *request
	held bool
	tag  int
}

type transfers []transfer

func (h transfers) Len() int { return len(h) }
func (h transfers) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h transfers) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *transfers) Push(x any)   { *h = append(*h, x.(transfer)) }
func (h *transfers) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
