package h1

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxResponseHead bounds a worker's status line and header fields.
const maxResponseHead = 1 << 20

// ErrMalformedAnswer marks an answer whose head cannot be read as HTTP/1
// (bad status line or field, conflicting lengths, a head over the bound):
// the worker got the request and answered wrongly, so a caller does not
// send the same request to it again.
var ErrMalformedAnswer = errors.New("malformed answer")

// reply is a worker's answer with what reading its body takes, allocated
// as one object: the response, the connection's reader of its body
// (conn.go), a length-delimited body's framing, and room for the values
// of its first header fields.
type reply struct {
	resp   http.Response
	reader bodyReader
	length lengthBody
	vals   [8]string
}

// readReply reads an answer's status line and header fields (one
// string, fields as substrings: see head.go) and frames its body as
// RFC 9112 §6.3 says: none for HEAD, 1xx, 204 and 304; chunked; a
// Content-Length; else until the worker closes. Trailers after a chunked
// body are read and dropped (the router relays bodies, not trailers).
func (c *conn) readReply(req *http.Request) (*reply, error) {
	head, scratch, err := readHead(c.br, c.scratch, maxResponseHead, false)
	c.scratch = scratch
	if errors.Is(err, errHeadTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrMalformedAnswer, err)
	}
	if err != nil {
		return nil, err
	}
	line, fields := nextLine(head)
	proto, status, _ := strings.Cut(line, " ")
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok || major != 1 {
		return nil, fmt.Errorf("%w: HTTP version %q", ErrMalformedAnswer, proto)
	}
	code, ok := statusCode(status)
	if !ok {
		return nil, fmt.Errorf("%w: status line %q", ErrMalformedAnswer, line)
	}
	a := new(reply)
	h := make(http.Header, strings.Count(fields, "\n"))
	if err := parseFields(fields, h, a.vals[:]); err != nil {
		return nil, fmt.Errorf("%w: header field: %w", ErrMalformedAnswer, err)
	}
	a.resp = http.Response{Status: strings.TrimSpace(status), StatusCode: code, Proto: proto, ProtoMajor: major,
		ProtoMinor: minor, Header: h, Request: req, ContentLength: -1}
	conn := h["Connection"]
	a.resp.Close = httpguts.HeaderValuesContainsToken(conn, "close") ||
		(minor == 0 && !httpguts.HeaderValuesContainsToken(conn, "keep-alive"))
	if err := c.frameBody(a, req.Method); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedAnswer, err)
	}
	return a, nil
}

// statusCode reads the three digits that start s.
func statusCode(s string) (int, bool) {
	if len(s) < 3 || (len(s) > 3 && s[3] != ' ') {
		return 0, false
	}
	n := 0
	for i := range 3 {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n >= 100
}

// frameBody sets the response's Body and ContentLength.
func (c *conn) frameBody(a *reply, method string) error {
	resp := &a.resp
	h := resp.Header
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	if len(te) > 0 && resp.ProtoMinor == 0 {
		// HTTP/1.0 has no transfer codings: the field is ignored, as
		// net/http does (the body ends at its Content-Length or the close).
		delete(h, "Transfer-Encoding")
		te = nil
	}
	length := int64(-1)
	if len(cl) > 0 {
		n, ok := parseLength(strings.TrimSpace(cl[0]))
		for _, v := range cl[1:] {
			ok = ok && strings.TrimSpace(v) == strings.TrimSpace(cl[0])
		}
		if !ok { // even beside a chunked coding, as net/http refuses it
			return fmt.Errorf("malformed Content-Length %q", cl)
		}
		length = n
	}
	if len(te) > 0 && (len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked")) {
		return fmt.Errorf("unsupported Transfer-Encoding %q", te)
	}
	code := resp.StatusCode
	if method == http.MethodHead || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		resp.Body = http.NoBody
		if method == http.MethodHead {
			resp.ContentLength = length
		} else {
			resp.ContentLength = 0
		}
		return nil
	}
	switch {
	case len(te) > 0:
		// Chunked framing wins over a Content-Length (RFC 9112 §6.3).
		delete(h, "Transfer-Encoding")
		delete(h, "Content-Length")
		resp.TransferEncoding = []string{"chunked"}
		resp.Body = &chunkedBody{c: c, r: httputil.NewChunkedReader(c.br)}
	case length == 0:
		resp.ContentLength, resp.Body = 0, http.NoBody
	case length > 0:
		resp.ContentLength = length
		a.length = lengthBody{c: c, remain: length}
		resp.Body = &a.length
	default:
		resp.Close = true // the body ends when the worker closes
		resp.Body = io.NopCloser(c.br)
	}
	return nil
}

// lengthBody is a body of remain bytes; a connection that ends earlier is
// io.ErrUnexpectedEOF. The last bytes come with io.EOF, so the connection
// goes back to the pool as soon as they are read.
type lengthBody struct {
	c      *conn
	remain int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.remain <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.c.br.Read(p)
	b.remain -= int64(n)
	switch {
	case b.remain == 0:
		return n, io.EOF
	case errors.Is(err, io.EOF):
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Close does nothing: the connection's bodyReader (conn.go) closes.
func (b *lengthBody) Close() error { return nil }

// chunkedBody decodes a chunked body and reads its trailer section at the
// end.
type chunkedBody struct {
	c *conn
	r io.Reader
	// err ends every later Read: once the body ended, its connection may
	// be idle, its reader its watcher's (idle.go).
	err error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		var scratch []byte
		scratch, err = readTrailer(b.c.br, b.c.scratch, maxResponseHead)
		switch {
		case err == nil:
			err = io.EOF
		case errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF // the worker closed within the trailer
		}
		b.c.scratch = scratch
	}
	b.err = err
	return n, err
}

// Close does nothing: the connection's bodyReader (conn.go) closes.
func (b *chunkedBody) Close() error { return nil }
