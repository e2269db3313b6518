package router

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// hopHeaders are connection-scoped and never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forwardHeaders copies the client's headers to the worker request, minus
// hop-by-hop ones, Accept-Encoding (bodies are relayed uncompressed so
// usage accounting can read them) and, unless credentials is set, the
// client's credentials: workers get the router's own key instead.
func forwardHeaders(dst, src http.Header, credentials bool) {
	for k, vs := range src {
		// Shared with the client's request, which nothing changes; the
		// capacity is cut so that an append to one copies.
		dst[k] = vs[:len(vs):len(vs)]
	}
	dropHop(dst)
	delete(dst, "Accept-Encoding")
	delete(dst, "Content-Length")
	if !credentials {
		for _, k := range credentialHeaders { // canonical already
			delete(dst, k)
		}
	}
}

// copyResponseHeaders copies the worker's headers; the router's own
// X-Request-Id, already set, wins. The value slices are shared with the
// worker's response, which nothing changes afterwards (capacity cut, so an
// append to one copies).
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if strings.EqualFold(k, "X-Request-Id") {
			continue
		}
		dst[k] = vs[:len(vs):len(vs)]
	}
	dropHop(dst)
}

func dropHop(h http.Header) {
	for _, f := range h["Connection"] {
		for name := range strings.SplitSeq(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders { // canonical already
		delete(h, k)
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relayBody copies src to the client chunk by chunk; tap (may be nil) sees
// every chunk. With flush set every chunk is flushed as it arrives, so
// streams are never held back; a body whose length the worker announced is
// not a stream, and the front server sends it with the headers in one
// write when the handler returns. Each write must finish within writeIdle: a client
// that stops reading is cut, while a stream that is merely long or slow to
// produce never is. It reports a read error from the worker and a write
// error to the client separately.
func relayBody(w http.ResponseWriter, src io.Reader, tap *usageTap, flush bool, writeIdle time.Duration) (readErr, writeErr error) {
	rc := control{w}
	// The response's last bytes go out after the handler returns: they get
	// a fresh window too.
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(writeIdle)) }()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if tap != nil {
				_, _ = tap.Write(buf[:n])
			}
			_ = rc.SetWriteDeadline(time.Now().Add(writeIdle))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil, werr
			}
			if flush {
				if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
					return nil, ferr
				}
			}
		}
		switch {
		case err == io.EOF:
			return nil, nil
		case err != nil:
			return err, nil
		}
	}
}

// control is http.NewResponseController(w) for what the router uses of
// it — deadlines and flushing — calling the writer's own methods when it
// has them (the front server's does) without the controller's allocation
// per use, and the controller otherwise (wrapped writers, recorders).
type control struct{ w http.ResponseWriter }

func (c control) SetReadDeadline(t time.Time) error {
	if d, ok := c.w.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return http.NewResponseController(c.w).SetReadDeadline(t)
}

func (c control) SetWriteDeadline(t time.Time) error {
	if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline(t)
	}
	return http.NewResponseController(c.w).SetWriteDeadline(t)
}

func (c control) Flush() error {
	if f, ok := c.w.(interface{ FlushError() error }); ok {
		return f.FlushError()
	}
	return http.NewResponseController(c.w).Flush()
}
