package virtual

import (
	"time"

	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/kvevents"
)

// KVEventDelay is the modelled time from an engine flushing a KV event
// batch to the router applying it. A served engine (the simulator, as
// vLLM's engine core) publishes a step's batch as the step is planned or
// completed, with no publish interval, and a subscriber on the same host
// receives it over loopback ZMQ well within a millisecond; one millisecond
// covers that transport and the subscriber's decoding without making the
// router see a cache before it could.
const KVEventDelay = time.Millisecond

// kvFeed is the deployment's KV event plumbing: the engines' batches go,
// KVEventDelay after they are flushed, into the router's block index when
// its policy follows KV events and the engines publish them (the spec's
// kv_events_config, as on the sim target in real time).
type kvFeed struct {
	deliver  bool      // the router follows the engines' events
	pending  []kvBatch // to the router, in publish order
	urls     []string  // worker URL by fleet worker
	observed bool      // the fleet's engines report their events
}

// kvBatch is one batch on its way to the router.
type kvBatch struct {
	at     time.Duration
	worker string
	b      kvevents.Batch
}

// publishes reports whether every worker's engine arguments enable KV
// events (kv_events_config); a bad config is the sim target's error to
// report, so it counts as not publishing here.
func publishes(workers []Worker) bool {
	for _, w := range workers {
		c, ok, err := kvevents.FromExtraArgs(w.Options.Engine.ExtraArgs)
		if !ok || err != nil || !c.Enabled() {
			return false
		}
	}
	return len(workers) > 0
}

// followKVEvents sets up the feed before the first request: delivery to a
// router whose policy follows KV events on engines that publish them; the
// engines report events only then.
func (d *Deployment) followKVEvents(workers []Worker) {
	f := &kvFeed{deliver: d.router != nil && d.router.FollowsKVEvents() && publishes(workers), urls: make([]string, len(workers))}
	for _, w := range workers {
		f.urls[d.workers[w.URL]] = w.URL
	}
	d.kv = f
	if !f.deliver {
		return
	}
	f.observed = true
	d.fleet.ObserveKVEvents(func(w, _ int, b kvevents.Batch) {
		f.pending = append(f.pending, kvBatch{at: d.fleet.Now() + KVEventDelay, worker: f.urls[w], b: b})
	})
}

// next is the earliest of at (when ok) and the next delivery.
func (f *kvFeed) next(at time.Duration, ok bool) (time.Duration, bool) {
	if len(f.pending) == 0 {
		return at, ok
	}
	if !ok || f.pending[0].at < at {
		return f.pending[0].at, true
	}
	return at, ok
}

// arrive applies to r every batch due by at, in publish order (the delay
// is constant, so publish order is arrival order).
func (f *kvFeed) arrive(r *router.Router, at time.Duration) {
	n := 0
	for ; n < len(f.pending) && f.pending[n].at <= at; n++ {
		r.ApplyKVEvents(f.pending[n].worker, f.pending[n].b)
		f.pending[n] = kvBatch{}
	}
	f.pending = f.pending[n:]
}
