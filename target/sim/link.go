package sim

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// kvLink is the network path between this decode server and one prefill
// server. Concurrent pulls over it share its bandwidth equally (processor
// sharing), as NIXL transfers between the same pair of engines share their
// NIC: eight simultaneous 4k-token pulls each take eight times as long as
// one alone.
type kvLink struct {
	clock      Clock
	bytesPerNs float64

	mu     sync.Mutex
	active []*kvTransfer
	last   time.Time // when active's progress was last brought up to date
	timer  Timer     // fires at the earliest completion
}

type kvTransfer struct {
	left float64 // bytes still to move
	done chan struct{}
}

func newKVLink(c Clock, gbps float64) *kvLink { return &kvLink{clock: c, bytesPerNs: gbps} }

// transfer moves bytes over the link, sharing it with every transfer in
// flight; it returns when the last byte is through or ctx ends.
func (l *kvLink) transfer(ctx context.Context, bytes float64) error {
	if bytes <= 0 {
		return ctx.Err()
	}
	x := &kvTransfer{left: bytes, done: make(chan struct{})}
	l.mu.Lock()
	l.advance(l.clock.Now())
	l.active = append(l.active, x)
	l.reschedule()
	l.mu.Unlock()
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		l.advance(l.clock.Now())
		if i := slices.Index(l.active, x); i >= 0 {
			l.active = slices.Delete(l.active, i, i+1)
			l.reschedule()
		}
		l.mu.Unlock()
		return ctx.Err()
	}
}

// advance credits every active transfer with its share of the bandwidth
// since the last update. The set is constant in between: every arrival,
// departure and completion updates first.
func (l *kvLink) advance(now time.Time) {
	if n := len(l.active); n > 0 {
		share := float64(now.Sub(l.last)) * l.bytesPerNs / float64(n)
		for _, x := range l.active {
			x.left -= share
		}
	}
	l.last = now
}

// reschedule sets the timer for the earliest completion at the current
// share.
func (l *kvLink) reschedule() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if len(l.active) == 0 {
		return
	}
	least := math.Inf(1)
	for _, x := range l.active {
		least = math.Min(least, x.left)
	}
	wait := time.Duration(math.Ceil(max(0, least) * float64(len(l.active)) / l.bytesPerNs))
	l.timer = l.clock.AfterFunc(wait, l.fire)
}

// fire completes the transfers that are through (a byte's slack absorbs
// the timer's nanosecond rounding) and schedules the next completion.
func (l *kvLink) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(l.clock.Now())
	l.active = slices.DeleteFunc(l.active, func(x *kvTransfer) bool {
		if x.left > 1 {
			return false
		}
		close(x.done)
		return true
	})
	l.reschedule()
}

// links are a decode server's kvLinks by prefill server address.
type links struct {
	mu sync.Mutex
	m  map[string]*kvLink
}

func (ls *links) get(addr string, c Clock, gbps float64) *kvLink {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[string]*kvLink{}
	}
	l, ok := ls.m[addr]
	if !ok {
		l = newKVLink(c, gbps)
		ls.m[addr] = l
	}
	return l
}
