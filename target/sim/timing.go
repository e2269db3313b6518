package sim

import "time"

// RequestTiming is when one answered request passed the engine, on the
// engine's clock (Options.Clock): the handler took it, the scheduler could
// take it, its first and last token were emitted. A caller on the same
// clock as the client (a sim target in the client's process) splits the
// client's latency into the path to the engine, the engine's time and the
// path back (`autoinfer sim overhead`, docs/whatif.md).
type RequestTiming struct {
	// ID is the X-Request-Id header as received ("" when none).
	ID   string
	Role Role
	// Received is when the HTTP handler began (before parsing the body).
	Received time.Time
	// Queued is when the sequence was built for the scheduler: from here
	// on the next step the engine plans can take it. A decode leg under
	// prefill/decode pulls its KV after this.
	Queued time.Time
	// First and Last are the emission times of the first and last token:
	// when the engine completed the steps that produced them.
	First, Last time.Time
	Tokens      int
}

// ObserveRequests calls fn for every generation request answered in full
// (nil: none), on the request's handler goroutine once its response is
// written. fn must be safe for concurrent use and return quickly. Real
// vLLM's wire shape is unchanged: the timings never reach the client.
func (s *Server) ObserveRequests(fn func(RequestTiming)) {
	if fn == nil {
		s.observe.Store(nil)
		return
	}
	s.observe.Store(&fn)
}

// timing reads sq's engine times; the token times are loop-owned, so
// under the engine's lock.
func (e *engine) timing(sq *seq, received time.Time, id string) RequestTiming {
	e.mu.Lock()
	defer e.mu.Unlock()
	return RequestTiming{ID: id, Role: e.cfg.role, Received: received, Queued: sq.arrival,
		First: sq.firstTok, Last: sq.lastTok, Tokens: sq.generated()}
}

// StepTiming is one engine step of the live loop, on the engine's clock:
// when the loop planned it, its planned end and when the loop completed it
// (its tokens' emission time). Done − End is the step's lag, the timer and
// goroutine wake-up the virtual clock models with one constant
// (engine_lag_ms, docs/whatif.md).
type StepTiming struct {
	Planned, End, Done time.Time
	// Woken is set on a step planned right after the loop idled: when the
	// request whose submit woke it was submitted (the earliest one the
	// loop found waiting). Zero when the step followed another step, or
	// the loop was woken by something other than a submit (a released KV
	// hold).
	Woken time.Time
}

// Wake splits a woken step's lateness (false when Woken is zero): plan,
// how long after the waking submit the loop planned it (a channel
// receive), and late, how much later than that submit plus the step's
// modelled duration it completed (plan + the step's own lag). The
// virtual clock models late with one constant (engine_wake_ms): a woken
// step's first token lands that long after the arrival and the step's
// time.
func (st StepTiming) Wake() (plan, late time.Duration, ok bool) {
	if st.Woken.IsZero() {
		return 0, 0, false
	}
	return st.Planned.Sub(st.Woken), st.Done.Sub(st.Woken) - st.End.Sub(st.Planned), true
}

// ObserveSteps calls fn for every step every rank completes (nil: none),
// on the rank's loop goroutine after the step's tokens were emitted. fn
// must be safe for concurrent use and return quickly.
func (s *Server) ObserveSteps(fn func(StepTiming)) {
	for _, e := range s.ranks {
		if fn == nil {
			e.steps.Store(nil)
			continue
		}
		e.steps.Store(&fn)
	}
}
