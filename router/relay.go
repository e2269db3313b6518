package router

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// hopHeaders are connection-scoped and never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forwardHeaders copies the client's headers to the worker request, minus
// hop-by-hop ones and Accept-Encoding (bodies are relayed uncompressed so
// usage accounting can read them).
func forwardHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	dropHop(dst)
	dst.Del("Accept-Encoding")
	dst.Del("Content-Length")
}

// copyResponseHeaders copies the worker's headers; the router's own
// X-Request-Id, already set, wins.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if strings.EqualFold(k, "X-Request-Id") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
	dropHop(dst)
}

func dropHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relayBody copies src to the client chunk by chunk; tap (may be nil) sees
// every chunk. With flush set every chunk is flushed as it arrives, so
// streams are never held back; a body whose length the worker announced is
// not a stream, and net/http sends it with the headers in one write when
// the handler returns. It reports a read error from the worker and a write
// error to the client separately.
func relayBody(w http.ResponseWriter, src io.Reader, tap *usageTap, flush bool) (readErr, writeErr error) {
	rc := http.NewResponseController(w)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if tap != nil {
				_, _ = tap.Write(buf[:n])
			}
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
