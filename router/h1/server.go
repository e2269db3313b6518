package h1

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server limits that apply when a field is left zero.
const (
	// DefaultMaxHeaderBytes bounds a request's head: request line and
	// header fields together (nginx reads 32 KiB, net/http 1 MiB).
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultReadHeaderTimeout bounds the arrival of a request's head
	// once its first byte came.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sends no
	// request for this long.
	DefaultIdleTimeout = 120 * time.Second
)

// Server serves HTTP/1.1 requests to a net/http Handler: the router's
// front server. See the package doc for what it speaks and why.
//
// A request's context is its connection's: it ends when the client closes
// the connection (or the connection fails) while a handler runs, and when
// the server closes the connection, but not when the handler returns, as
// net/http's does. The router bounds each request's work with a context of
// its own that it cancels on return (request_timeout_secs); a context per
// request was a fifth of the server's allocations.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading a request's head after its first
	// byte; IdleTimeout bounds the wait for a request on a kept-alive or
	// new connection.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers together; a
	// larger head is answered 431.
	MaxHeaderBytes int
	// MaxBodyBytes, when positive, bounds a request body: reading past it
	// fails with ErrBodyTooLarge and the connection is closed after the
	// answer. The handler enforces its own, lower limits first.
	MaxBodyBytes int64
	// BaseContext returns the context requests derive from (nil:
	// context.Background()).
	BaseContext func(net.Listener) context.Context
	// Log receives handler panics (nil: slog.Default()).
	Log *slog.Logger

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*serverConn]struct{}
	shutting bool
	drained  chan struct{} // closed when shutting and conns is empty
	wg       sync.WaitGroup
	dateNow  atomic.Pointer[dateValue]
}

// dateValue is the Date field of the second it was made in.
type dateValue struct {
	unix int64
	text string
}

// date is the Date field's value now, formatted once a second.
func (s *Server) date() string {
	now := time.Now()
	if d := s.dateNow.Load(); d != nil && d.unix == now.Unix() {
		return d.text
	}
	d := &dateValue{unix: now.Unix(), text: now.UTC().Format(http.TimeFormat)}
	s.dateNow.Store(d)
	return d.text
}

// Open is the number of connections open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// ErrBodyTooLarge is what reading a body past MaxBodyBytes returns.
var ErrBodyTooLarge = errors.New("request body exceeds the server's limit")

// Serve accepts connections on ln and serves each on its own goroutine
// until Shutdown or Close, when it returns http.ErrServerClosed (and any
// other accept error as it is). Serve may be called once.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("h1: Serve called twice")
	}
	s.ln, s.conns, s.drained = ln, map[*serverConn]struct{}{}, make(chan struct{})
	shutting := s.shutting
	s.mu.Unlock()
	if shutting {
		_ = ln.Close()
		return http.ErrServerClosed
	}
	base := context.Background()
	if s.BaseContext != nil {
		base = s.BaseContext(ln)
	}
	base = context.WithValue(base, http.LocalAddrContextKey, ln.Addr())
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isShutting() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and go on, as
			// net/http does, rather than spin or stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log().Warn("h1: accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := newServerConn(base, s, nc)
		if !s.add(c) {
			_ = nc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Server) isShutting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutting
}

// add tracks c; false once the server shuts down.
func (s *Server) add(c *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

// remove forgets c when its goroutine ends.
func (s *Server) remove(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.shutting && len(s.conns) == 0 && s.drained != nil {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
	s.mu.Unlock()
	s.wg.Done()
}

// Shutdown stops accepting, closes every connection that waits for a
// request (new ones included), and lets the others finish the answer in
// progress, after which they close. It returns when every connection is
// closed or ctx ends (then with ctx's error; Close cuts the rest).
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.startShutdown()
	for _, c := range conns {
		c.closeIfIdle()
	}
	s.mu.Lock()
	drained := s.drained
	s.mu.Unlock()
	if drained == nil { // never served
		return nil
	}
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting and closes every connection at once; handlers
// still running see their connection's reads and writes fail and their
// requests' contexts cancelled. It waits for the connections' goroutines.
func (s *Server) Close() error {
	for _, c := range s.startShutdown() {
		c.abort()
	}
	s.wg.Wait()
	return nil
}

// startShutdown marks the server shutting down, closes the listener and
// returns the connections open now.
func (s *Server) startShutdown() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shutting {
		s.shutting = true
		if s.ln != nil {
			_ = s.ln.Close()
		}
		if len(s.conns) == 0 && s.drained != nil {
			close(s.drained)
		}
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
