package h1

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Dialer opens connections; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Fallback serves the requests Transport does not speak; *http.Transport
// is one.
type Fallback interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Options configure a Transport.
type Options struct {
	Dial Dialer
	// Fallback takes https and the requests described in the package doc.
	Fallback Fallback
	// MaxIdlePerHost bounds the idle connections kept per host.
	MaxIdlePerHost int
	// IdleTimeout closes a connection that sat idle this long (0: never).
	IdleTimeout time.Duration
	// ReadBufferSize and WriteBufferSize size each connection's buffers
	// (0: 4 KiB).
	ReadBufferSize, WriteBufferSize int
	// Now is the clock idle times are read from (nil: time.Now).
	Now func() time.Time
}

// Transport is an HTTP/1.1 RoundTripper; see the package doc. It is safe
// for concurrent use.
type Transport struct {
	opts Options

	mu   sync.Mutex
	idle map[string][]*conn // host:port → idle connections, most recent last
}

// New returns a Transport; opts.Dial and opts.Fallback are required.
func New(opts Options) *Transport {
	if opts.ReadBufferSize <= 0 {
		opts.ReadBufferSize = 4 << 10
	}
	if opts.WriteBufferSize <= 0 {
		opts.WriteBufferSize = 4 << 10
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Transport{opts: opts, idle: map[string][]*conn{}}
}

// RoundTrip sends req and returns the worker's answer with its headers
// read; the body is read from the connection as the caller reads it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !Speaks(req) {
		return t.opts.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := hostPort(req.URL)
	body := req.Body
	for fresh := false; ; fresh = true {
		if err := ctx.Err(); err != nil {
			closeBody(body)
			return nil, err
		}
		c, err := t.conn(ctx, addr, fresh)
		if err != nil {
			closeBody(body)
			return nil, err
		}
		resp, err := c.roundTrip(ctx, req, body)
		if err == nil {
			return resp, nil
		}
		// The worker closed a kept-alive connection as the request went
		// out: nothing was answered, so the request is sent again on a new
		// connection, as net/http's Transport does.
		replayable := req.GetBody != nil || body == nil || body == http.NoBody
		if !c.reused || !errors.Is(err, errNothingRead) || !replayable || ctx.Err() != nil {
			return nil, cancelled(ctx, err)
		}
		if req.GetBody != nil {
			if body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("replaying request body: %w", err)
			}
		}
	}
}

// Speaks reports whether a Transport serves req itself (plain HTTP/1.1:
// http, a body of known length, no 100-continue, no trailers) rather than
// handing it to the fallback. Such a request is no longer used by the
// Transport once RoundTrip returned: it was written whole before the
// answer was read, so its caller may reuse its parts.
func Speaks(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" || len(req.Trailer) > 0 || req.Header.Get("Expect") != "" {
		return false
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	return !hasBody || req.ContentLength > 0
}

// hostPort is the address to dial for u.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// conn returns an idle connection to addr (unless fresh) or dials one.
func (t *Transport) conn(ctx context.Context, addr string, fresh bool) (*conn, error) {
	if !fresh {
		if c := t.takeIdle(addr); c != nil {
			return c, nil
		}
	}
	nc, err := t.opts.Dial.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, cancelled(ctx, err)
	}
	return newConn(t, addr, nc), nil
}

func (t *Transport) takeIdle(addr string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[addr]
	for len(cs) > 0 {
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		cs = cs[:len(cs)-1]
		if t.opts.IdleTimeout > 0 && t.opts.Now().Sub(c.idleSince) > t.opts.IdleTimeout {
			c.closeIdle()
			continue
		}
		if !c.state.CompareAndSwap(connIdle, connBusy) {
			continue // its watcher is discarding it
		}
		t.idle[addr] = cs
		c.reused = true
		return c
	}
	delete(t.idle, addr)
	return nil
}

// putIdle keeps c, which the caller owns, for the next request to its
// host, with its watcher reading (idle.go); false when the host has enough
// idle connections.
func (t *Transport) putIdle(c *conn) bool {
	c.idleSince = t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[c.addr]
	if len(cs) >= t.opts.MaxIdlePerHost {
		return false
	}
	c.state.Store(connIdle)
	c.startWatch()
	t.idle[c.addr] = append(cs, c)
	return true
}

// dropIdle forgets an idle connection its watcher discards.
func (t *Transport) dropIdle(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[c.addr]
	if i := slices.Index(cs, c); i >= 0 {
		t.idle[c.addr] = slices.Delete(cs, i, i+1)
	}
}

// CloseIdleConnections closes every idle connection (and the fallback's).
// Connections in use are closed when their answers end.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*conn{}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.closeIdle()
		}
	}
	t.opts.Fallback.CloseIdleConnections()
}

// cancelled puts ctx's error in front of the one a cancelled request
// ended with (a deadline in the past), as net/http reports cancellation.
func cancelled(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}

func closeBody(b interface{ Close() error }) {
	if b != nil {
		_ = b.Close()
	}
}

// validHeader reports whether a header field can be written as is: no
// byte that ends the line or the field early.
func validHeader(k string, vs []string) bool {
	if k == "" || strings.ContainsAny(k, " :\r\n\x00") {
		return false
	}
	for _, v := range vs {
		if strings.ContainsAny(v, "\r\n\x00") {
			return false
		}
	}
	return true
}
