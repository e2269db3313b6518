package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is one kept-alive connection to a host; it carries one request at
// a time.
type conn struct {
	t         *Transport
	addr      string
	nc        net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	reused    bool // it carried an earlier request
	idleSince time.Time
	scratch   []byte // room to read an answer's head into
	// abort is c.abortIO, bound once: the cancellation hook of every
	// round trip on the connection.
	abort func()

	// The idle watch (idle.go): state, and the watcher's channels, made
	// when the connection first goes idle.
	state atomic.Int32
	kick  chan struct{}
	heard chan error
}

func newConn(t *Transport, addr string, nc net.Conn) *conn {
	c := &conn{t: t, addr: addr, nc: nc,
		br: bufio.NewReaderSize(nc, t.opts.ReadBufferSize), bw: bufio.NewWriterSize(nc, t.opts.WriteBufferSize)}
	c.abort = c.abortIO
	return c
}

// abortIO makes every pending and later read and write fail at once.
func (c *conn) abortIO() { _ = c.nc.SetDeadline(aLongTimeAgo) }

// errNothingRead marks a failure on a reused connection before any byte
// of the answer arrived: the request may be sent again.
var errNothingRead = errors.New("connection closed before any answer")

// aLongTimeAgo is a deadline that makes every pending and later read and
// write on a connection fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip writes req with body and reads the answer's headers. Until the
// answer's body is finished, cancelling ctx aborts the connection's reads
// and writes; the connection then is closed rather than reused.
func (c *conn) roundTrip(ctx context.Context, req *http.Request, body io.ReadCloser) (*http.Response, error) {
	stop := context.AfterFunc(ctx, c.abort)
	a, err := c.exchange(req, body)
	if err != nil {
		stop()
		c.close()
		return nil, err
	}
	resp := &a.resp
	keep := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		c.release(stop, keep)
		return resp, nil
	}
	a.reader = bodyReader{rc: resp.Body, c: c, ctx: ctx, stop: stop, keep: keep}
	resp.Body = &a.reader
	return resp, nil
}

// exchange writes the request and reads the answer's status and headers,
// skipping informational (1xx) answers.
func (c *conn) exchange(req *http.Request, body io.ReadCloser) (*reply, error) {
	if err := c.writeRequest(req, body); err != nil {
		if errors.Is(err, errInvalidRequest) {
			return nil, err
		}
		// A worker may answer before it read the whole body (a 413) and
		// close: that answer, not the broken write, is what it said.
		if a, rerr := c.answerAfterWriteError(req); rerr == nil {
			return a, nil
		}
		if c.reused {
			return nil, fmt.Errorf("%w: writing request: %w", errNothingRead, err)
		}
		return nil, err
	}
	if err := c.firstByte(); err != nil {
		if c.reused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return nil, fmt.Errorf("%w: %w", errNothingRead, err)
		}
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	for {
		a, err := c.readReply(req)
		if err != nil {
			return nil, fmt.Errorf("reading answer: %w", err)
		}
		if code := a.resp.StatusCode; code < 200 && code != http.StatusSwitchingProtocols {
			continue // 100 Continue, 103 Early Hints: the answer follows
		}
		if a.resp.StatusCode == http.StatusSwitchingProtocols {
			a.resp.Close = true // the connection is no longer HTTP
		}
		return a, nil
	}
}

// firstByte waits for the answer's first byte: read here on a new
// connection, brought by the watcher's pending read on one that was idle.
// Until it returned, the watcher owns br: on a reused connection nothing
// else may read the connection before (an answer read after a failed
// write too; the read ends at once then, the connection being broken).
func (c *conn) firstByte() error {
	if c.reused {
		return c.awaitAnswer()
	}
	_, err := c.br.Peek(1)
	return err
}

var errInvalidRequest = errors.New("invalid request")

// answerAfterWriteError reads an answer the worker sent before the write
// failed. A write fails only on a connection the worker reset or closed
// (or one our cancellation aborted), so the read does not wait: it finds
// the answer already received, or the end of the connection. The
// connection is not reused after it.
func (c *conn) answerAfterWriteError(req *http.Request) (*reply, error) {
	// On a reused connection the idle watcher owns br until its pending
	// read returns (firstByte); reading before that would race with it.
	if err := c.firstByte(); err != nil {
		return nil, err
	}
	for {
		a, err := c.readReply(req)
		if err != nil {
			return nil, err
		}
		if code := a.resp.StatusCode; code >= 200 {
			a.resp.Close = true
			return a, nil
		}
	}
}

// writeRequest writes req's request line, headers and body in as few
// writes as the buffer allows, as net/http's Request.Write would put them
// (Host first, a default User-Agent, Content-Length). It closes body.
func (c *conn) writeRequest(req *http.Request, body io.ReadCloser) error {
	defer closeBody(body)
	w := c.bw
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validHeader("Host", []string{host}) {
		return fmt.Errorf("%w: host %q", errInvalidRequest, host)
	}
	_, _ = w.WriteString(req.Method)
	_ = w.WriteByte(' ')
	_, _ = w.WriteString(req.URL.RequestURI())
	_, _ = w.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = w.WriteString(host)
	_, _ = w.WriteString("\r\n")
	ua := "Go-http-client/1.1"
	if vs, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vs) > 0 {
			ua = vs[0]
		}
	}
	if ua != "" {
		writeField(w, "User-Agent", ua)
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !validHeader(k, vs) {
			return fmt.Errorf("%w: header %q", errInvalidRequest, k)
		}
		for _, v := range vs {
			writeField(w, k, v)
		}
	}
	if req.Close {
		writeField(w, "Connection", "close")
	}
	hasBody := body != nil && body != http.NoBody
	switch {
	case hasBody:
		writeField(w, "Content-Length", strconv.FormatInt(req.ContentLength, 10))
	case req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch:
		writeField(w, "Content-Length", "0")
	}
	_, _ = w.WriteString("\r\n")
	if hasBody {
		n, err := io.Copy(w, body)
		if err != nil {
			return fmt.Errorf("writing request body: %w", err)
		}
		if n != req.ContentLength {
			return fmt.Errorf("%w: ContentLength=%d with a body of %d bytes", errInvalidRequest, req.ContentLength, n)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing request: %w", err)
	}
	return nil
}

func writeField(w *bufio.Writer, k, v string) {
	_, _ = w.WriteString(k)
	_, _ = w.WriteString(": ")
	_, _ = w.WriteString(v)
	_, _ = w.WriteString("\r\n")
}

// release ends the connection's round trip: back to the idle pool when the
// answer was read to its end, can be followed by another, was not
// cancelled (stop reports false once the cancel ran) and nothing was read
// past it (bytes after an answer are unsolicited: idle.go), closed
// otherwise.
func (c *conn) release(stop func() bool, reuse bool) {
	if stop() && reuse && c.br.Buffered() == 0 && c.t.putIdle(c) {
		return
	}
	c.close()
}

// bodyReader is an answer's body: net/http's reader (chunked or
// length-delimited) over the connection, which goes back to the pool at
// the body's end.
type bodyReader struct {
	rc   io.Reader
	c    *conn
	ctx  context.Context
	stop func() bool
	keep bool

	mu   sync.Mutex
	done bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.finish(b.keep)
	case err != nil:
		b.finish(false)
		err = cancelled(b.ctx, err)
	}
	return n, err
}

// Close closes the connection unless the body was read to its end: the
// rest of an answer (a stream, say) is not worth reading to keep it.
// net/http's own body Close would read it. Close may be called while a
// Read is blocked; it ends that Read.
func (b *bodyReader) Close() error {
	b.finish(false)
	return nil
}

func (b *bodyReader) finish(reuse bool) {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	if !done {
		b.c.release(b.stop, reuse)
	}
}
