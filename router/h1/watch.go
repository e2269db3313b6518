package h1

import "sync"

// Watching a connection while its handler runs.
//
// Once a request's body is read, a read is left pending on the
// connection, as net/http's server does, so that a client that closes its
// connection cancels its request at once (the router then cancels the
// worker's request and releases its load). net/http starts a goroutine for
// that read per request and, when the answer is done, aborts it (a
// deadline change, a wake-up and a wait) to read the next request itself.
// Here each connection has two goroutines that take turns: the one that
// serves a request asks the other to watch; the watcher's read returns the
// next request's first bytes, and the watcher, once the answer before is
// done, serves that request itself, while the first waits to be asked to
// watch in turn. Per request that is one wake-up for the read and one for
// the request to watch, and no aborted read.

// turns coordinates a connection's two goroutines.
type turns struct {
	kick chan struct{} // asks the waiting goroutine to watch
	turn chan struct{} // the right to serve, handed to the watcher
	// other is closed when the second goroutine has ended.
	other   chan struct{}
	started bool
	once    sync.Once
}

// watch asks the other goroutine to read (starting it the first time); the
// caller hands it the turn once its answer is done. It reports false when
// the connection still holds unread bytes (a pipelined request): then
// there is nothing to watch and the caller serves on.
func (c *serverConn) watch() bool {
	if c.br.Buffered() > 0 || !c.cr.drained() {
		return false
	}
	t := &c.turns
	if !t.started {
		t.started = true
		t.kick, t.turn, t.other = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
		c.cr.wbuf = make([]byte, 4<<10)
		go c.follow()
	}
	// The watcher reads under the deadline in force now, and later ones
	// apply at once.
	_ = c.dl.applyRead()
	c.dl.readPending = true
	t.kick <- struct{}{}
	return true
}

// follow is the second goroutine: it waits to be asked to watch, reads,
// waits for the turn and serves, until the connection closes.
func (c *serverConn) follow() {
	defer close(c.turns.other)
	c.await()
}

// await watches when asked and serves when given the turn, until the
// connection closes (the channels are closed by stop).
func (c *serverConn) await() {
	t := &c.turns
	for range t.kick {
		n, err := c.nc.Read(c.cr.wbuf)
		if err != nil {
			c.cr.clientGone()
		}
		if _, ok := <-t.turn; !ok {
			return
		}
		c.cr.data, c.cr.err = c.cr.wbuf[:n], err
		if !c.lead() {
			c.stop()
			return
		}
	}
}

// stop ends the turns: the goroutine that holds the turn calls it when the
// connection is done; the other leaves its wait.
func (c *serverConn) stop() {
	c.turns.once.Do(func() {
		_ = c.nc.Close()
		if c.turns.started {
			close(c.turns.kick)
			close(c.turns.turn)
		}
	})
}
