package h1

import (
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// statusError is a request the server refuses before any handler sees it;
// it is answered with status and msg in the OpenAI error shape.
type statusError struct {
	status int
	typ    string
	msg    string
}

func (e *statusError) Error() string { return strconv.Itoa(e.status) + " " + e.msg }

func badRequest(msg string) *statusError {
	return &statusError{status: http.StatusBadRequest, typ: "invalid_request", msg: msg}
}

// errHeadTooLarge is what the connection's reader returns once a head
// passed MaxHeaderBytes.
var errHeadTooLarge = errors.New("request head too large")

// framing is how a request's body is delimited.
type framing struct {
	length int64 // Content-Length; -1: chunked
	// expectContinue: the client waits for "100 Continue" before it sends
	// the body.
	expectContinue bool
}

// headRoom is what a connection reuses from one request to the next: the
// request its handlers get, and the URL, header map and header values'
// backing array a head is parsed into. A handler must not use its request
// once it returned (as with net/http); the strings themselves are
// substrings of each request's own head, so a value a handler keeps (a run
// id) stays intact.
type headRoom struct {
	template, req *http.Request
	url           url.URL
	header        http.Header
	vals          []string
}

// maxRoomFields bounds the header fields whose map and values a
// connection keeps for the next request: a rare huge head is parsed into
// its own, which the next request does not carry along.
const maxRoomFields = 64

// parseHead parses a request head (readHead) into req, whose context is
// already set, using room's URL, map and values (see headRoom), and says
// how its body is framed. It is strict where a
// lenient reading would let a proxy and the worker behind it see different
// requests: a request with both Content-Length and Transfer-Encoding,
// several or malformed Content-Lengths, a transfer coding other than
// chunked, or a folded header line is refused.
func parseHead(head string, req *http.Request, room *headRoom) (framing, error) {
	line, fields := nextLine(head)
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return framing{}, badRequest("malformed request line")
	}
	if method == "" || !validFieldName(method) {
		return framing{}, badRequest("invalid method")
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok {
		return framing{}, badRequest("malformed HTTP version")
	}
	if major != 1 {
		return framing{}, &statusError{status: http.StatusHTTPVersionNotSupported, typ: "invalid_request", msg: "only HTTP/1.x is served"}
	}
	if method == http.MethodConnect {
		return framing{}, &statusError{status: http.StatusMethodNotAllowed, typ: "method_not_allowed", msg: "CONNECT is not served"}
	}
	u := &room.url
	if !plainTarget(u, target) {
		var err error
		if u, err = url.ParseRequestURI(target); err != nil {
			return framing{}, badRequest("malformed request target")
		}
	}
	n := strings.Count(fields, "\n") + 1
	h := room.header
	if h == nil || n > maxRoomFields {
		h = make(http.Header, n)
	} else {
		clear(h)
	}
	if n <= maxRoomFields {
		room.header = h
		if len(room.vals) < n {
			room.vals = make([]string, n)
		}
	}
	if err := parseFields(fields, h, room.vals); err != nil {
		return framing{}, badRequest("malformed header field")
	}
	req.Method, req.RequestURI, req.URL, req.Header = method, target, u, h
	req.Proto, req.ProtoMajor, req.ProtoMinor = proto, major, minor

	hosts := h["Host"]
	switch {
	case len(hosts) > 1:
		return framing{}, badRequest("several Host headers")
	case len(hosts) == 0 && minor >= 1:
		return framing{}, badRequest("missing required Host header")
	case len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]):
		return framing{}, badRequest("malformed Host header")
	}
	req.Host = u.Host
	if req.Host == "" && len(hosts) == 1 {
		req.Host = hosts[0]
	}
	delete(h, "Host")
	req.Close = wantsClose(minor, h["Connection"])

	fr, err := bodyFraming(h, minor)
	if err != nil {
		return framing{}, err
	}
	req.ContentLength = fr.length
	if fr.length < 0 {
		req.TransferEncoding = []string{"chunked"}
		delete(h, "Transfer-Encoding")
	}
	return fr, nil
}

// plainTarget reads an origin-form target ("/v1/completions?x=1") whose
// path needs no unescaping into u, as url.ParseRequestURI would, without
// its general parse; it reports false (u untouched) for any other target.
func plainTarget(u *url.URL, target string) bool {
	if len(target) == 0 || target[0] != '/' || strings.HasPrefix(target, "//") {
		return false
	}
	path, query, hasQuery := strings.Cut(target, "?")
	for i := range len(path) {
		if !plainPathByte(path[i]) {
			return false
		}
	}
	for i := range len(query) {
		if c := query[i]; c < ' ' || c == 0x7f {
			return false
		}
	}
	*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
	return true
}

// plainPathByte reports whether c stands for itself in a path that
// url.URL.EscapedPath would write the same (so no RawPath is kept).
func plainPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~$&+,/:;=@", c) >= 0
}

// bodyFraming reads Content-Length, Transfer-Encoding and Expect.
func bodyFraming(h http.Header, minor int) (framing, error) {
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	fr := framing{}
	switch {
	case len(te) > 0 && len(cl) > 0:
		return fr, badRequest("both Content-Length and Transfer-Encoding")
	case len(te) > 0:
		if minor == 0 {
			return fr, badRequest("Transfer-Encoding in an HTTP/1.0 request")
		}
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return fr, &statusError{status: http.StatusNotImplemented, typ: "invalid_request", msg: "unsupported Transfer-Encoding; only chunked is served"}
		}
		fr.length = -1
	case len(cl) > 1:
		return fr, badRequest("several Content-Length headers")
	case len(cl) == 1:
		n, ok := parseLength(cl[0])
		if !ok {
			return fr, badRequest("invalid Content-Length")
		}
		fr.length = n
	}
	if ex := h["Expect"]; len(ex) > 0 && minor >= 1 {
		if len(ex) != 1 || !strings.EqualFold(ex[0], "100-continue") {
			return fr, &statusError{status: http.StatusExpectationFailed, typ: "invalid_request", msg: "unsupported Expect; only 100-continue is served"}
		}
		fr.expectContinue = fr.length != 0
	}
	return fr, nil
}

// parseLength accepts 1 to 18 decimal digits and nothing else (no sign,
// no spaces, no list): the value must be read the same by every hop.
func parseLength(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// wantsClose reports whether the client asked to close after this
// request: HTTP/1.0 unless it asked to keep alive, HTTP/1.1 when it said
// close.
func wantsClose(minor int, conn []string) bool {
	if minor == 0 {
		return !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	}
	return httpguts.HeaderValuesContainsToken(conn, "close")
}

// body is a request's body as the handler reads it: Content-Length bytes
// or a chunked stream, from the connection's buffered reader.
type body struct {
	c       *serverConn
	remain  int64     // Content-Length bytes left; -1 when chunked
	chunked io.Reader // when chunked
	read    int64     // bytes read so far
	max     int64     // the server's MaxBodyBytes (0: none)
	expect  bool      // "100 Continue" still to be sent before reading
	done    bool      // the whole body was read
	closed  bool
	err     error // sticky
}

func (c *serverConn) newBody(fr framing) *body {
	b := &c.body
	*b = body{c: c, remain: fr.length, max: c.srv.MaxBodyBytes, expect: fr.expectContinue}
	if fr.length < 0 {
		b.chunked = httputil.NewChunkedReader(c.br)
	}
	return b
}

func (b *body) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	}
	if b.expect {
		b.expect = false
		if err := b.c.sendContinue(); err != nil {
			b.err = err
			return 0, err
		}
	}
	var n int
	var err error
	if b.chunked == nil {
		if int64(len(p)) > b.remain {
			p = p[:b.remain]
		}
		n, err = b.c.br.Read(p)
		b.remain -= int64(n)
		switch {
		case b.remain == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	} else {
		n, err = b.chunked.Read(p)
		if err == io.EOF {
			err = b.readTrailer()
		}
	}
	b.read += int64(n)
	if b.max > 0 && b.read > b.max {
		b.err = ErrBodyTooLarge
		return 0, b.err
	}
	switch {
	case err == io.EOF:
		b.done = true
		b.c.bodyDone()
	case err != nil:
		b.err = err
	}
	return n, err
}

// readTrailer reads the trailer section after a chunked body's last
// chunk, within the head limit, and drops it; it returns io.EOF.
func (b *body) readTrailer() error {
	scratch, err := readTrailer(b.c.br, b.c.scratch, b.c.maxHead())
	b.c.scratch = scratch
	if err != nil {
		return badRequest("malformed chunked body trailer")
	}
	return io.EOF
}

func (b *body) Close() error {
	b.closed = true
	return nil
}
