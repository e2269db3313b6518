package router

import (
	"sync"
	"sync/atomic"
	"time"
)

// BreakerState is a circuit's state; the values are vllm_router_cb_state's.
type BreakerState int

// Circuit states.
const (
	BreakerClosed   BreakerState = 0
	BreakerOpen     BreakerState = 1
	BreakerHalfOpen BreakerState = 2
)

func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "closed"
}

// Breaker is one worker's circuit: Closed → Open after FailureThreshold
// consecutive failures; Open → HalfOpen once TimeoutDurationSecs passed (on
// the next Allow); HalfOpen → Closed after SuccessThreshold consecutive
// successes, and any failure in HalfOpen reopens it. HalfOpen admits traffic
// like vllm-router does. Callers decide what a failure is (4xx never is).
type Breaker struct {
	cfg      CircuitBreakerConfig
	now      func() time.Time
	onChange func(from, to BreakerState)

	// open mirrors state == BreakerOpen for Allow's lock-free fast path:
	// every pick asks every worker's circuit, and almost all are closed.
	open atomic.Bool

	mu       sync.Mutex
	state    BreakerState
	fails    int
	oks      int
	openedAt time.Time
}

// NewBreaker returns a closed circuit. onChange (may be nil) is called, under
// the breaker's lock, on every transition.
func NewBreaker(cfg CircuitBreakerConfig, now func() time.Time, onChange func(from, to BreakerState)) *Breaker {
	return &Breaker{cfg: cfg, now: now, onChange: onChange}
}

// Allow reports whether the worker may receive traffic now.
func (b *Breaker) Allow() bool {
	if b.cfg.Disable || !b.open.Load() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.now().Sub(b.openedAt) >= secs(b.cfg.TimeoutDurationSecs) {
		b.set(BreakerHalfOpen)
	}
	return b.state != BreakerOpen
}

// State returns the current state without advancing it.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Record feeds one attempt's outcome.
func (b *Breaker) Record(success bool) {
	if b.cfg.Disable {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if success {
		b.fails = 0
		b.oks++
		if b.state == BreakerHalfOpen && b.oks >= b.cfg.SuccessThreshold {
			b.set(BreakerClosed)
		}
		return
	}
	b.oks = 0
	b.fails++
	if b.state == BreakerHalfOpen || (b.state == BreakerClosed && b.fails >= b.cfg.FailureThreshold) {
		b.openedAt = b.now()
		b.set(BreakerOpen)
	}
}

func (b *Breaker) set(to BreakerState) {
	from := b.state
	b.state, b.fails, b.oks = to, 0, 0
	b.open.Store(to == BreakerOpen)
	if b.onChange != nil && from != to {
		b.onChange(from, to)
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
