package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// errConnClosed ends a connection's context when the connection closes.
var errConnClosed = errors.New("connection closed")

// errClientGone cancels a request whose client closed its connection (or
// whose connection failed) while the handler ran.
var errClientGone = errors.New("client connection closed")

// connState is where a connection is between requests.
type connState int

const (
	stateIdle   connState = iota // waiting for a request (new ones too)
	stateActive                  // reading a request or answering it
	stateClosed                  // closed by Shutdown while idle
)

// serverConn serves the requests of one client connection, one after
// another, on two goroutines that take turns (watch.go).
type serverConn struct {
	srv     *Server
	nc      net.Conn
	cr      *connReader
	br      *bufio.Reader
	bw      *bufio.Writer
	scratch []byte // room to read a head into
	remote  string
	ctx     context.Context
	cancel  context.CancelCauseFunc
	pre     []byte // a response's body before its head is sent
	state   connState
	// room is the request a handler gets and what its head is parsed
	// into, reused from one request to the next like resp and body.
	room headRoom
	// watching: the other goroutine reads on the connection (watch.go).
	watching bool
	turns    turns
	// The answer and body of the request in progress, reused from one
	// request to the next (a handler must not use them once it returned).
	resp response
	body body
	dl   deadlines
}

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// preSize is how much of a response's body is held before its head goes
// out: a body that ends within it is sent with a Content-Length in one
// write, a longer one is chunked (net/http holds 2 KiB likewise).
const preSize = 2 << 10

func newServerConn(base context.Context, s *Server, nc net.Conn) *serverConn {
	c := &serverConn{srv: s, nc: nc, remote: nc.RemoteAddr().String(), pre: make([]byte, 0, preSize)}
	c.ctx, c.cancel = context.WithCancelCause(base)
	c.cr = newConnReader(nc, orDefault(s.ReadHeaderTimeout, DefaultReadHeaderTimeout))
	c.cr.cancel = c.cancel
	c.dl.nc = nc
	c.cr.dl = &c.dl
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(c.cr)
	c.bw = writerPool.Get().(*bufio.Writer)
	c.bw.Reset(connWriter{&c.dl})
	return c
}

func (c *serverConn) maxHead() int {
	if c.srv.MaxHeaderBytes > 0 {
		return c.srv.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// serve answers requests until the client closes, asks to close, sends
// something unservable, or the server shuts down; it is the connection's
// first goroutine and its owner (watch.go has the second).
func (c *serverConn) serve() {
	defer c.close()
	// A new connection must send its first request within the header
	// timeout, as with net/http; between requests the idle timeout runs.
	_ = c.setReadDeadline(time.Now().Add(orDefault(c.srv.ReadHeaderTimeout, DefaultReadHeaderTimeout)))
	if c.lead() {
		c.await()
	}
	c.stop()
	if c.turns.started {
		<-c.turns.other
	}
}

// lead serves requests while this goroutine holds the turn. It reports
// true when it handed the turn to the watching goroutine, false when the
// connection is done.
func (c *serverConn) lead() bool {
	idle := orDefault(c.srv.IdleTimeout, DefaultIdleTimeout)
	for {
		c.cr.readingHead(true)
		if _, err := c.br.Peek(1); err != nil {
			return false
		}
		if !c.setState(stateActive) {
			return false
		}
		c.watching, c.dl.readPending = false, false
		keep := c.serveOne()
		if !keep || !c.setState(stateIdle) {
			return false
		}
		_ = c.setReadDeadline(time.Now().Add(idle))
		if c.watching {
			c.turns.turn <- struct{}{}
			return true
		}
	}
}

// serveOne reads one request and answers it; it reports whether the
// connection can carry another.
func (c *serverConn) serveOne() bool {
	req := c.request()
	head, scratch, err := readHead(c.br, c.scratch, c.maxHead(), true)
	c.scratch = scratch
	c.cr.readingHead(false)
	var fr framing
	if err == nil {
		fr, err = parseHead(head, req, &c.room)
	}
	if err != nil {
		c.refuse(err)
		c.lingerClose()
		return false
	}
	_ = c.setReadDeadline(time.Time{})
	req.RemoteAddr = c.remote
	var b *body
	if fr.length == 0 {
		req.Body = http.NoBody
		c.bodyDone()
	} else {
		b = c.newBody(fr)
		req.Body = b
	}
	w := c.newResponse(req, b)
	if !c.runHandler(w, req) {
		return false
	}
	w.finish()
	if b != nil && !b.done {
		c.lingerClose()
	}
	return !w.closeAfter && c.cr.err == nil
}

// request is the connection's request, reset: a zero request with the
// connection's context (see Server). The context can only be set by
// copying a request, so a template that has it is copied over the one
// request the connection hands to its handlers.
func (c *serverConn) request() *http.Request {
	if c.room.req == nil {
		var zero http.Request
		c.room.template, c.room.req = zero.WithContext(c.ctx), new(http.Request)
	}
	*c.room.req = *c.room.template
	return c.room.req
}

// runHandler calls the handler; false when it panicked, after which the
// connection is cut: what was already encoded goes out, nothing more (a
// handler aborts a response that way, http.ErrAbortHandler).
func (c *serverConn) runHandler(w *response, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler { //nolint:errorlint // net/http compares the same way
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.log().Error("h1: handler panicked", "remote", c.remote, "uri", req.RequestURI, "panic", p, "stack", string(buf))
			}
			if w.headSent {
				_ = c.bw.Flush()
			}
			ok = false
		}
	}()
	c.srv.Handler.ServeHTTP(w, req)
	return true
}

// refuse answers a request the server could not read, when there is
// anyone to answer.
func (c *serverConn) refuse(err error) {
	var se *statusError
	switch {
	case errors.As(err, &se):
	case errors.Is(err, errHeadTooLarge):
		se = &statusError{status: http.StatusRequestHeaderFieldsTooLarge, typ: "invalid_request", msg: "request head exceeds the server's limit"}
	case errors.Is(err, errBareLF):
		se = badRequest(errBareLF.Error())
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			se = &statusError{status: http.StatusRequestTimeout, typ: "invalid_request", msg: "request head not received in time"}
			break
		}
		return // the client left mid-head: nobody to answer
	}
	_ = c.setWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.bw.Write(errorResponse(se))
	_ = c.bw.Flush()
}

// bodyDone is called once a request's body was read to its end: from now
// on a read on the connection watches for the client leaving.
func (c *serverConn) bodyDone() {
	if !c.watching {
		c.watching = c.watch()
	}
}

// sendContinue tells a client that waits for it to send its body.
func (c *serverConn) sendContinue() error {
	if _, err := c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
		return err
	}
	return c.bw.Flush()
}

// setState moves the connection between idle and active; false when
// Shutdown closed it while it was idle.
func (c *serverConn) setState(st connState) bool {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.state == stateClosed {
		return false
	}
	if st == stateIdle && c.srv.shutting {
		return false
	}
	c.state = st
	return true
}

// closeIfIdle closes the connection if it waits for a request.
func (c *serverConn) closeIfIdle() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.state == stateIdle {
		c.state = stateClosed
		_ = c.nc.Close()
	}
}

// abort closes the connection whatever it is doing.
func (c *serverConn) abort() {
	c.cancel(errConnClosed)
	_ = c.nc.Close()
}

// close releases the connection once both its goroutines ended.
func (c *serverConn) close() {
	c.cancel(errConnClosed)
	_ = c.nc.Close()
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.bw.Reset(nil)
	writerPool.Put(c.bw)
	c.srv.remove(c)
}

// lingerTime bounds how long a closing connection reads what its client
// still sends (net/http waits 500 ms likewise).
const lingerTime = 500 * time.Millisecond

// lingerBytes bounds what a closing connection reads and discards.
const lingerBytes = 1 << 20

// lingerClose half-closes a connection whose client may still be sending
// (a body the handler did not read, a refused head) and reads what comes
// for a while: closing with unread bytes would reset the connection, and
// the client could lose the answer it was sent (a 413, a 429).
func (c *serverConn) lingerClose() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	deadline := time.Now().Add(lingerTime)
	_ = c.setReadDeadline(deadline)
	n, _ := io.Copy(io.Discard, io.LimitReader(c.cr, lingerBytes))
	if n < lingerBytes {
		return // the client finished, left or went quiet
	}
	// The client is still sending more than the server will read. Reading
	// on would cost CPU without bound; closing now would reset the
	// connection, and a reset can discard the answer still unread in the
	// client's socket. So stop reading but close only at the deadline, as
	// net/http does: by then the client has read its answer.
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

func (c *serverConn) setReadDeadline(t time.Time) error  { return c.dl.setRead(t) }
func (c *serverConn) setWriteDeadline(t time.Time) error { return c.dl.setWrite(t) }

// shuttingDown reports whether the server is shutting down.
func (c *serverConn) shuttingDown() bool {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.srv.shutting
}
