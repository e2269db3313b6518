package h1

import (
	"context"
	"net"
	"sync"
	"time"
)

// connReader is what a server connection's buffered reader reads from. It
// starts the header timeout when a head takes more than one read, and
// watches the connection while a handler runs.
//
// Watching: once a request's body is read, a read is left pending on a
// second goroutine, as net/http's server does, so that a client that
// closes its connection cancels its request at once (the router then
// cancels the worker's request and releases its load). Unlike net/http,
// the pending read is not aborted when the answer is done (a deadline
// change, a wake-up and a wait per request): its bytes are the next
// request's, handed over when the connection reads again.
type connReader struct {
	nc          net.Conn
	setDeadline func(time.Time) error // the connection's read deadline
	inHead      bool                  // reading a request head
	headReads   int
	headTimeout time.Duration

	kick    chan struct{} // asks the watcher for one read
	res     chan readResult
	exited  chan struct{}
	started bool
	pending bool   // a watch read was asked for and its result not taken
	wbuf    []byte // the watcher's buffer
	data    []byte // bytes of the last watch read not yet handed over
	err     error  // the last watch read's error, handed over after data

	mu     sync.Mutex
	cancel context.CancelCauseFunc // the running request's
}

type readResult struct {
	n   int
	err error
}

func newConnReader(nc net.Conn, headTimeout time.Duration) *connReader {
	return &connReader{nc: nc, headTimeout: headTimeout}
}

// readingHead starts (true) or ends reading a request head.
func (cr *connReader) readingHead(on bool) {
	cr.inHead, cr.headReads = on, 0
}

func (cr *connReader) Read(p []byte) (int, error) {
	if cr.inHead {
		// The first read waits for the request under the idle timeout;
		// the rest of the head must come within the header timeout.
		if cr.headReads++; cr.headReads == 2 {
			_ = cr.setDeadline(time.Now().Add(cr.headTimeout))
		}
	}
	if cr.pending {
		r := <-cr.res
		cr.pending = false
		cr.data, cr.err = cr.wbuf[:r.n], r.err
	}
	var n int
	var err error
	switch {
	case len(cr.data) > 0:
		n = copy(p, cr.data)
		cr.data = cr.data[n:]
	case cr.err != nil:
		err = cr.err
	default:
		n, err = cr.nc.Read(p)
	}
	return n, err
}

// watch leaves a read pending on the watcher goroutine, unless one is or
// its bytes are still to be handed over.
func (cr *connReader) watch() {
	if cr.pending || len(cr.data) > 0 || cr.err != nil {
		return
	}
	if !cr.started {
		cr.started = true
		cr.kick, cr.res, cr.exited = make(chan struct{}, 1), make(chan readResult, 1), make(chan struct{})
		cr.wbuf = make([]byte, 4<<10)
		go cr.watchLoop()
	}
	cr.pending = true
	cr.kick <- struct{}{}
}

// watchLoop reads once per kick until stop. A failed read cancels the
// running request, if any: its client is gone.
func (cr *connReader) watchLoop() {
	defer close(cr.exited)
	for range cr.kick {
		n, err := cr.nc.Read(cr.wbuf)
		if err != nil {
			cr.mu.Lock()
			if cr.cancel != nil {
				cr.cancel(errClientGone)
			}
			cr.mu.Unlock()
		}
		cr.res <- readResult{n, err}
	}
}

// watchFor sets the request a failed watch read cancels (nil: none).
func (cr *connReader) watchFor(cancel context.CancelCauseFunc) {
	cr.mu.Lock()
	cr.cancel = cancel
	cr.mu.Unlock()
}

// healthy reports whether no read failed yet: a failed watch read means
// the connection cannot carry another request.
func (cr *connReader) healthy() bool {
	if cr.pending {
		select {
		case r := <-cr.res:
			cr.pending = false
			cr.data, cr.err = cr.wbuf[:r.n], r.err
		default:
			return true
		}
	}
	return cr.err == nil
}

// stop ends the watcher; the connection is closed already, so a pending
// read returns.
func (cr *connReader) stop() {
	if cr.started {
		close(cr.kick)
		<-cr.exited
	}
}
