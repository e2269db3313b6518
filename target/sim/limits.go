package sim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Limits bound what one client can make a server hold, as the router's
// timeouts do: a body trickled byte by byte, a connection that never sends
// a request or sits idle, a client that stops reading. None cuts a
// legitimate stream, however long: the write timeout applies to each write
// separately. Zero fields take the defaults.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout bounds reading a request's body.
	BodyReadTimeout time.Duration
	// WriteIdleTimeout bounds one write to a client that stopped reading.
	WriteIdleTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds a request body (413 above it).
	MaxBodyBytes int64
}

// Defaults of Limits, the router's (docs/sim.md).
const (
	DefaultReadHeaderTimeout = 30 * time.Second
	DefaultBodyReadTimeout   = 300 * time.Second
	DefaultWriteIdleTimeout  = 120 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxBodyBytes      = 32 << 20
)

// withDefaults fills zero fields and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"read_header_timeout", &l.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"body_read_timeout", &l.BodyReadTimeout, DefaultBodyReadTimeout},
		{"write_idle_timeout", &l.WriteIdleTimeout, DefaultWriteIdleTimeout},
		{"idle_timeout", &l.IdleTimeout, DefaultIdleTimeout},
	} {
		if *f.v < 0 {
			return l, fmt.Errorf("limits.%s: must be > 0, got %v", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if l.MaxBodyBytes < 0 {
		return l, field.Errorf("limits.max_body_bytes", "must be > 0, got %d", l.MaxBodyBytes)
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return l, nil
}

// bounded applies the body limits and the write timeout to every request.
func (s *Server) bounded(h http.Handler) http.Handler {
	lim := s.cfg.limits
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		iw := &idleWriter{ResponseWriter: w, rc: rc, idle: lim.WriteIdleTimeout}
		iw.arm() // a deadline left by the previous response must not cut this one
		defer iw.arm()
		if r.ContentLength > lim.MaxBodyBytes {
			w.Header().Set("Connection", "close") // never read the rest
			writeError(iw, tooLarge(lim.MaxBodyBytes))
			return
		}
		_ = rc.SetReadDeadline(time.Now().Add(lim.BodyReadTimeout))
		r.Body = &bodyReader{r: http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes), rc: rc}
		h.ServeHTTP(iw, r)
	})
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: typeTooLarge,
		msg: fmt.Sprintf("request body exceeds %d bytes", limit)}
}

// readBody reads a request body within the server's limits: 413 above
// the size bound, 408 when it does not arrive within the read timeout.
func readBody(r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge(mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return nil, &apiError{status: http.StatusRequestTimeout, typ: typeTimeout, msg: "request body not received within the read timeout"}
	case err != nil:
		return nil, badRequest("", "reading request body: %v", err)
	}
	return body, nil
}

// bodyReader clears the read deadline once the body is in: an expired
// deadline would end the connection's background read and cancel a long
// response.
type bodyReader struct {
	r  io.ReadCloser
	rc *http.ResponseController
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.r.Close() }

// idleWriter gives every write (and flush) a fresh write deadline, so a
// client that stops reading is cut after WriteIdleTimeout while a stream
// that is merely long never is.
type idleWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w *idleWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.idle)) }

func (w *idleWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

func (w *idleWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
