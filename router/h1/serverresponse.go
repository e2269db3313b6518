package h1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the http.ResponseWriter of one request. A body is held until
// it passes preSize, the handler flushes, or the handler returns: a body
// that ends within that goes out with a Content-Length, with its head, in
// one write; a longer or flushed one of unknown length is chunked.
type response struct {
	c          *serverConn
	req        *http.Request
	body       *body // nil: the request had none
	header     http.Header
	status     int   // 0 until WriteHeader
	declared   int64 // the handler's Content-Length; -1: none
	written    int64
	headSent   bool
	chunked    bool
	noBody     bool // HEAD, 204, 304
	closeAfter bool // the connection closes after this answer
	werr       error
}

func (c *serverConn) newResponse(req *http.Request, b *body) *response {
	c.pre = c.pre[:0]
	h := c.resp.header
	if h == nil {
		h = make(http.Header, 8)
	}
	clear(h)
	c.resp = response{c: c, req: req, body: b, header: h, declared: -1, closeAfter: req.Close}
	return &c.resp
}

func (w *response) Header() http.Header { return w.header }

// WriteHeader sends nothing yet (an informational 1xx excepted): the head
// goes out with the first bytes that leave.
func (w *response) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.status = code
	w.noBody = w.req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
	if v := w.header.Get("Content-Length"); v != "" {
		if n, ok := parseLength(v); ok {
			w.declared = n
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) writeInformational(code int) {
	var buf []byte
	buf = appendStatusLine(buf, code)
	buf = appendFields(buf, w.header)
	buf = append(buf, "\r\n"...)
	_, _ = w.c.bw.Write(buf)
	_ = w.c.bw.Flush()
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.werr != nil {
		return 0, w.werr
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			w.written += int64(len(p))
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.headSent {
		if len(w.c.pre)+len(p) <= cap(w.c.pre) {
			w.c.pre = append(w.c.pre, p...)
			return len(p), nil
		}
		w.sendHead(false)
	}
	w.writeBody(p)
	if w.werr != nil {
		return 0, w.werr
	}
	return len(p), nil
}

// writeBody encodes p into the connection's buffer.
func (w *response) writeBody(p []byte) {
	if len(p) == 0 || w.werr != nil {
		return
	}
	bw := w.c.bw
	if w.chunked {
		var size [20]byte
		_, _ = bw.Write(append(strconv.AppendInt(size[:0], int64(len(p)), 16), '\r', '\n'))
		_, _ = bw.Write(p)
		_, w.werr = bw.WriteString("\r\n")
	} else {
		_, w.werr = bw.Write(p)
	}
	if w.werr != nil {
		w.closeAfter = true
	}
}

// Flush sends the head and every byte written so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a failed write (http.ResponseController).
func (w *response) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(false)
	}
	if w.werr != nil {
		return w.werr
	}
	if err := w.c.bw.Flush(); err != nil {
		w.werr, w.closeAfter = err, true
	}
	return w.werr
}

// SetReadDeadline and SetWriteDeadline set the connection's deadlines
// (http.ResponseController).
func (w *response) SetReadDeadline(t time.Time) error  { return w.c.setReadDeadline(t) }
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.setWriteDeadline(t) }

// finish ends the answer once the handler returned.
func (w *response) finish() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(true)
	}
	if w.chunked && w.werr == nil {
		_, w.werr = w.c.bw.WriteString("0\r\n\r\n")
	}
	if w.declared >= 0 && w.written < w.declared && !w.noBody {
		w.closeAfter = true // cut short: only a close tells the client
	}
	if w.werr == nil {
		w.werr = w.c.bw.Flush()
	}
	if w.werr != nil {
		w.closeAfter = true
	}
}

// sendHead encodes the status line and header fields, with the held body
// bytes after them; final says the handler returned, so the held bytes
// are the whole body.
func (w *response) sendHead(final bool) {
	w.headSent = true
	h := w.header
	if w.body != nil && !w.body.done {
		// An unread body (or one never asked for with 100-continue) would
		// be taken for the next request.
		w.closeAfter = true
	}
	if !w.closeAfter && (httpguts.HeaderValuesContainsToken(h["Connection"], "close") || w.c.shuttingDown()) {
		w.closeAfter = true
	}
	if _, ok := h["Content-Type"]; !ok && !w.noBody && len(w.c.pre) > 0 {
		h.Set("Content-Type", http.DetectContentType(w.c.pre))
	}
	buf := appendStatusLine(w.c.bw.AvailableBuffer(), w.status)
	buf = appendFields(buf, h)
	if _, ok := h["Date"]; !ok {
		buf = append(append(append(buf, "Date: "...), w.c.srv.date()...), "\r\n"...)
	}
	switch {
	case w.status == http.StatusNoContent || w.status == http.StatusNotModified:
	case w.declared >= 0:
		buf = append(strconv.AppendInt(append(buf, "Content-Length: "...), w.declared, 10), "\r\n"...)
	case final:
		buf = append(strconv.AppendInt(append(buf, "Content-Length: "...), w.written, 10), "\r\n"...)
	case w.noBody:
	case w.req.ProtoMinor >= 1:
		w.chunked = true
		buf = append(buf, "Transfer-Encoding: chunked\r\n"...)
	default:
		w.closeAfter = true // HTTP/1.0: the end of the body is the close
	}
	switch {
	case w.closeAfter:
		buf = append(buf, "Connection: close\r\n"...)
	case w.req.ProtoMinor == 0:
		buf = append(buf, "Connection: keep-alive\r\n"...)
	}
	buf = append(buf, "\r\n"...)
	if _, err := w.c.bw.Write(buf); err != nil {
		w.werr, w.closeAfter = err, true
		return
	}
	if !w.noBody {
		w.writeBody(w.c.pre)
	}
	w.c.pre = w.c.pre[:0]
}

func appendStatusLine(buf []byte, code int) []byte {
	buf = strconv.AppendInt(append(buf, "HTTP/1.1 "...), int64(code), 10)
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return append(append(append(buf, ' '), text...), "\r\n"...)
}

// managed are the fields the server writes itself.
var managed = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Trailer": true}

// appendFields encodes h, dropping fields with invalid names and turning
// line breaks inside values into spaces, as net/http does: a handler's
// values can never end the head early.
func appendFields(buf []byte, h http.Header) []byte {
	for k, vs := range h {
		if managed[k] || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			buf = append(append(append(append(buf, k...), ": "...), strings.TrimSpace(v)...), "\r\n"...)
		}
	}
	return buf
}

// errorResponse is a whole answer to a request the server refused, in the
// OpenAI error shape; the connection closes after it.
func errorResponse(e *statusError) []byte {
	var body bytes.Buffer
	_ = json.NewEncoder(&body).Encode(map[string]any{"error": map[string]any{
		"message": e.msg, "type": e.typ, "param": nil, "code": e.status}})
	buf := appendStatusLine(nil, e.status)
	buf = append(buf, "Content-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	buf = strconv.AppendInt(buf, int64(body.Len()), 10)
	buf = append(buf, "\r\n\r\n"...)
	return append(buf, body.Bytes()...)
}
