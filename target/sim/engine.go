package sim

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxCatchUp bounds how far a late step may borrow from the next one. The
// loop schedules each step from the previous step's planned end, so timer
// overshoot on a loaded machine does not accumulate into lower throughput;
// after an idle period or a long stall it restarts from the current time.
const maxCatchUp = 20 * time.Millisecond

// engine is one data-parallel rank: one scheduler goroutine over its own
// KV cache. Everything except the atomics is guarded by mu; the loop holds
// mu while planning and while completing a step, never while a step runs.
type engine struct {
	cfg      *config
	m        *rankMetrics
	engineID string

	mu       sync.Mutex
	pool     *blockPool
	incoming []*seq
	waiting  []*seq // FIFO; preempted sequences return to the front
	running  []*seq
	held     map[string]*heldKV
	resets   []resetReq // POST /reset_prefix_cache waiting for the loop
	stopped  bool
	items    []stepItem    // the current step's plan, reused
	batch    Batch         // the current step's shape, reused
	hitIDs   []int32       // an admission's prefix-hit blocks, reused
	tier     *cpuTier      // nil: no CPU tier
	kv       *kvEventLog   // nil: no KV events published
	loadTime time.Duration // CPU-tier loads of the step being planned
	// submitted is when the earliest request still in incoming was
	// submitted (zero when incoming is empty): after idling, the arrival
	// whose poke woke the loop.
	submitted time.Time

	wake    chan struct{}
	pulling atomic.Int32                     // decode requests pulling KV: counted as waiting
	steps   atomic.Pointer[func(StepTiming)] // ObserveSteps
}

type stepItem struct {
	s      *seq
	n      int // tokens computed for s in this step
	decode bool
}

func newEngine(cfg *config, m *rankMetrics, engineID string) *engine {
	e := &engine{
		cfg: cfg, m: m, engineID: engineID,
		pool: newBlockPool(cfg.numBlocks), held: map[string]*heldKV{},
		wake: make(chan struct{}, 1),
	}
	// resolve has checked the options, so the tier cannot fail here.
	e.tier, _ = newCPUTier(cfg.offload, cfg.profile.KVBytesPerToken*cfg.blockSize)
	if e.tier != nil {
		e.pool.evicted = func(h uint64) {
			e.tier.store(h)
			m.offloadStored.Inc()
		}
	}
	return e
}

// submit hands s to the engine; false means the engine has stopped.
func (e *engine) submit(s *seq) bool {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return false
	}
	if len(e.incoming) == 0 {
		e.submitted = e.cfg.clock.Now()
	}
	e.incoming = append(e.incoming, s)
	e.mu.Unlock()
	e.poke()
	return true
}

// cancel asks the engine to drop s at its next step.
func (e *engine) cancel(s *seq, why int32) {
	if s.abort.CompareAndSwap(abortNone, why) {
		e.poke()
	}
}

func (e *engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// run is the engine loop. It returns when ctx is done, after finishing every
// sequence still inside with errEngineStopped.
func (e *engine) run(ctx context.Context) {
	clock := e.cfg.clock
	timer := clock.NewTimer(time.Hour)
	timer.Stop()
	defer e.shutdown()
	var lastEnd time.Time // planned end of the previous step; zero after idling
	idled := false        // the loop slept on e.wake since its last step
	for {
		now := clock.Now()
		e.mu.Lock()
		woken := e.submitted
		dur := e.plan(now)
		e.mu.Unlock()
		if len(e.items) == 0 {
			lastEnd = time.Time{}
			idled = true
			select {
			case <-e.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		end := stepStart(now, lastEnd).Add(dur)
		if wait := end.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C():
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
		lastEnd = end
		done := clock.Now()
		e.mu.Lock()
		e.complete(done)
		e.mu.Unlock()
		e.m.stepLag(dur, done.Sub(end))
		if obs := e.steps.Load(); obs != nil {
			st := StepTiming{Planned: now, End: end, Done: done}
			if idled {
				st.Woken = woken
			}
			(*obs)(st)
		}
		idled = false
	}
}

// stepStart is when a step planned at now starts, given the planned end of
// the step before it (zero after idling): that end when the loop is less
// than maxCatchUp behind it, so a late wake-up does not lengthen the next
// step's schedule, else now. The live loop and the virtual fleet (with its
// modelled lag) both plan with it, so their rules cannot drift apart.
func stepStart(now, lastEnd time.Time) time.Time {
	if !lastEnd.IsZero() && now.Sub(lastEnd) < maxCatchUp {
		return lastEnd
	}
	return now
}

// complete applies the planned step at its end time now: computed KV,
// newly full blocks into the prefix cache, one token for every sequence that
// caught up with its known tokens.
func (e *engine) complete(now time.Time) {
	bs := e.cfg.blockSize
	for _, it := range e.items {
		s := it.s
		if s.finished || s.abort.Load() != abortNone {
			continue
		}
		s.computed += it.n
		if e.cfg.prefixCache {
			full := s.computed / bs
			s.ensureHashes(full, bs)
			for ; s.registered < full; s.registered++ {
				if e.pool.register(s.blocks[s.registered], s.hashes[s.registered]) && e.kv != nil {
					e.kv.stored(s, s.registered, bs)
				}
			}
			if e.kv != nil {
				e.kv.flush(e) // before s (or anyone) hears of this step
			}
		}
		if s.computed < s.known() {
			continue // mid-prefill
		}
		g := s.generated() + 1
		e.m.token(s, now)
		if s.fleet != nil {
			s.fleet.token(s, now)
		}
		if g >= s.target {
			e.finish(s, s.reason, g, now)
			continue
		}
		s.publish(g, false)
		s.signal()
	}
	e.items = e.items[:0]
	e.compactRunning()
}

// finish ends s after its g-th token.
func (e *engine) finish(s *seq, reason string, g int, now time.Time) {
	s.finished = true
	if s.holdKV && reason == "length" {
		s.heldBlocks = e.hold(s)
	} else {
		e.releaseBlocks(s.blocks)
	}
	s.blocks = nil
	e.m.finished(s, reason, g, now)
	s.finishReason = reason
	s.publish(g, true)
	s.signal()
	if s.fleet != nil {
		s.fleet.finished(s, now)
	}
}

// dropAborted removes sequences whose handler gave up or matched a stop
// string, freeing their KV.
func (e *engine) dropAborted(now time.Time) {
	drop := func(s *seq) bool {
		why := s.abort.Load()
		if why == abortNone {
			return false
		}
		reason := "abort"
		if why == abortStopString {
			reason = "stop"
		}
		e.finish(s, reason, s.generated(), now)
		return true
	}
	e.waiting = slices.DeleteFunc(e.waiting, drop)
	e.running = slices.DeleteFunc(e.running, drop)
}

func (e *engine) compactRunning() {
	e.running = slices.DeleteFunc(e.running, func(s *seq) bool { return s.finished })
}

func (e *engine) publishGauges() {
	e.m.running.Set(float64(len(e.running)))
	e.m.waiting.Set(float64(len(e.waiting) + int(e.pulling.Load())))
	e.m.kvUsage.Set(e.pool.usage())
	if e.tier != nil {
		e.m.offloadUsage.Set(e.tier.usage())
	}
}

// shutdown ends every sequence still inside with errEngineStopped.
func (e *engine) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	for _, list := range [][]*seq{e.incoming, e.waiting, e.running} {
		for _, s := range list {
			if !s.finished {
				s.finished = true
				s.err = errEngineStopped
				s.finishReason = "abort"
				s.publish(s.generated(), true)
				s.signal()
			}
		}
	}
	e.incoming, e.waiting, e.running = nil, nil, nil
	e.dropHeld()
	e.failResets()
	e.publishGauges()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
