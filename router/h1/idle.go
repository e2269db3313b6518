package h1

// Watching idle worker connections.
//
// A worker may speak on a kept-alive connection when nothing was asked: a
// second answer after a complete one (a bug, or a worker tricked into
// answering twice), a 408 before it closes, or just its close. If such a
// connection were reused, the next request would read the bytes already
// there as its answer, and every later request on the connection would get
// the answer of the one before: one client's completion handed to
// another. So a connection goes back to the pool only when its answer
// ended exactly at the end of what was read (release), and while it is
// idle a read is pending on it, as net/http's Transport keeps one: a byte
// or a close that this read sees while the connection is idle discards it
// at once.
//
// The read is done by a goroutine of the connection's own, started when
// the connection first goes idle, that takes turns with the round trips
// like the server's two goroutines (watch.go): a round trip that takes
// the connection from the pool writes its request while the read is still
// pending, and that read brings the first bytes of the answer, which the
// goroutine hands over (heard) instead of discarding the connection. So no
// read is ever aborted, which would cost a deadline change, a wake-up and
// a wait per request; what watching costs is one wake-up to start the read
// and one to hand over its bytes, and no allocation once the connection
// was idle once.
//
// A connection is in one of three states, changed by compare-and-swap so
// that the watcher and a round trip taking it from the pool agree on who
// has it. A byte that arrives in the instant between the watcher's read
// returning and its swap, while a round trip takes the connection and
// writes, is taken for that round trip's answer: the same window
// net/http's Transport has between its read and the check of whether a
// request is waiting; HTTP/1.1 cannot tell an early answer from a late
// unsolicited one.

// Connection states.
const (
	connBusy int32 = iota // a round trip has it (new, or taken from the pool)
	connIdle              // in the pool, its watcher reading
	connDead              // closed
)

// watch is a connection's watcher: each time the connection goes idle
// (kick) it reads until a byte or an error comes. While the connection is
// still idle that discards it; once a round trip took it, the result goes
// to that round trip (heard). It returns when the connection is closed.
func (c *conn) watch() {
	for range c.kick {
		_, err := c.br.Peek(1)
		if c.state.CompareAndSwap(connIdle, connDead) {
			// Spoke unasked, or closed by the worker, while idle.
			c.t.dropIdle(c)
			_ = c.nc.Close()
			return
		}
		if c.state.Load() == connDead {
			return // closed by its owner or the pool while the read was pending
		}
		c.heard <- err
	}
}

// startWatch makes c's watcher read: the caller owns c and is about to
// make it idle (putIdle, under the pool's lock, so that no round trip
// can take c before its watcher was asked to read).
func (c *conn) startWatch() {
	if c.kick == nil {
		c.kick, c.heard = make(chan struct{}, 1), make(chan error, 1)
		go c.watch()
	}
	c.kick <- struct{}{}
}

// close closes a connection its caller owns (busy), and ends its watcher.
func (c *conn) close() {
	if c.state.Swap(connDead) == connDead {
		return
	}
	_ = c.nc.Close()
	if c.kick != nil {
		close(c.kick)
	}
}

// closeIdle closes an idle connection the caller took out of the pool,
// unless its watcher already did.
func (c *conn) closeIdle() {
	if c.state.CompareAndSwap(connIdle, connDead) {
		_ = c.nc.Close()
	}
}

// awaitAnswer waits for the first byte of the answer on a connection that
// was idle: its watcher's read brings it (or the read's error).
func (c *conn) awaitAnswer() error { return <-c.heard }
