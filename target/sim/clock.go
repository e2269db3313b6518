package sim

import (
	"context"
	"net"
	"time"
)

// Clock is where an engine reads the time and waits. The engine core (plan,
// complete, admission, metrics) takes the time as an argument; only the live
// drivers (the step loop, KV hold expiry, modelled transfers, injected
// latency) wait, and they wait on this. The default is the time package, so
// tests inside a testing/synctest bubble get the bubble's fake time; a test
// can also inject a clock whose timers fire late to model a loaded host.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer an engine uses. C is nil for AfterFunc
// timers.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// RealClock is the time package.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
func (r realTimer) Stop() bool                 { return r.t.Stop() }

// sleepCtx waits d on c; false if ctx ended first.
func sleepCtx(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Network is how a prefill engine opens its KV side channel and a decode
// engine reaches a peer's. The default is TCP; tests inside a synctest bubble
// pass an in-memory network (simtest.Network).
type Network interface {
	Listen(network, address string) (net.Listener, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// tcpNetwork is the default Network.
type tcpNetwork struct{ d net.Dialer }

func (tcpNetwork) Listen(network, address string) (net.Listener, error) {
	return net.Listen(network, address)
}

func (n *tcpNetwork) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return n.d.DialContext(ctx, network, address)
}
