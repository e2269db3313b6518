package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// earlierHead is parsed into the room before each fuzzed head.
const earlierHead = "POST /earlier?q=1 HTTP/1.1\r\nHost: earlier\r\nX-Earlier: 1\r\nX-Test: a\r\nX-Test: b\r\nContent-Length: 3\r\n"

// FuzzParseRequestHead checks the server's head parser on any bytes: it
// never panics, every request it accepts has one body framing, valid
// fields and only CRLF line ends, and net/http reads the same request from
// the same bytes (the router's parser may refuse more, never accept
// something else).
//
//	go test -run '^$' -fuzz FuzzParseRequestHead ./router/h1/
func FuzzParseRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/completions?x=1 HTTP/1.1\r\nHost: a:8000\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET http://h/p HTTP/1.1\r\nHost: h\r\nconnection: close\r\nx-a:  b \r\n\r\n",
		"GET / HTTP/1.0\n\n",
		"GET /a%20b/c?q=%zz&x=y#f HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: x\r\nX: 1\r\n folded\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		head, _, err := readHead(bufio.NewReader(bytes.NewReader(data)), nil, DefaultMaxHeaderBytes, true)
		if err != nil {
			return
		}
		for i := range len(head) {
			if head[i] == '\n' && (i == 0 || head[i-1] != '\r') {
				t.Fatalf("bare LF accepted: %q", data)
			}
		}
		// The room held another request's head before, as a connection's
		// does: nothing of that one may show in this one.
		room := new(headRoom)
		if _, err := parseHead(earlierHead, &http.Request{}, room); err != nil {
			t.Fatal(err)
		}
		var req http.Request
		fr, err := parseHead(head, &req, room)
		if err != nil {
			return
		}
		h := req.Header
		if len(h["Content-Length"]) > 0 && fr.length < 0 {
			t.Fatalf("both Content-Length and chunked accepted: %q", data)
		}
		if fr.length < -1 {
			t.Fatalf("length %d", fr.length)
		}
		for k, vs := range h {
			if !httpguts.ValidHeaderFieldName(k) {
				t.Fatalf("field name %q accepted", k)
			}
			for _, v := range vs {
				if !httpguts.ValidHeaderFieldValue(v) || strings.TrimSpace(v) != v {
					t.Fatalf("field value %q accepted", v)
				}
			}
		}
		// Empty lines before the request line are skipped, as net/http's
		// server (not ReadRequest) does.
		std, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(bytes.TrimLeft(data, "\r\n"))))
		if err != nil {
			t.Fatalf("accepted what net/http refuses (%v): %q", err, data)
		}
		if std.Method != req.Method || std.RequestURI != req.RequestURI || std.Host != req.Host ||
			std.ProtoMinor != req.ProtoMinor || std.ContentLength != req.ContentLength || std.Close != req.Close {
			t.Fatalf("read differently from net/http: %q\nours %s %s %s 1.%d len %d close %v\nstd  %s %s %s 1.%d len %d close %v", data,
				req.Method, req.RequestURI, req.Host, req.ProtoMinor, req.ContentLength, req.Close,
				std.Method, std.RequestURI, std.Host, std.ProtoMinor, std.ContentLength, std.Close)
		}
		if *std.URL != *req.URL {
			t.Fatalf("target %q read as %#v, net/http %#v", req.RequestURI, *req.URL, *std.URL)
		}
		delete(std.Header, "Host")
		if len(std.Header) != len(h) {
			t.Fatalf("fields %v, net/http %v: %q", h, std.Header, data)
		}
		for k, vs := range std.Header {
			if strings.Join(vs, "\x00") != strings.Join(h[k], "\x00") {
				t.Fatalf("field %s: %q, net/http %q", k, h[k], vs)
			}
		}
	})
}

// FuzzReadResponse checks the client's answer parser the same way against
// net/http's ReadResponse: what it accepts, net/http reads alike.
//
//	go test -run '^$' -fuzz FuzzReadResponse ./router/h1/
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
		"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nboom",
		"HTTP/1.0 204\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		req := &http.Request{Method: http.MethodGet}
		if head {
			req.Method = http.MethodHead
		}
		c := &conn{br: bufio.NewReader(bytes.NewReader(data))}
		a, err := c.readReply(req)
		if err != nil {
			return
		}
		resp := &a.resp
		defer resp.Body.Close()
		body, bodyErr := io.ReadAll(resp.Body)
		std, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), req)
		if err != nil {
			t.Fatalf("accepted what net/http refuses (%v): %q", err, data)
		}
		defer std.Body.Close()
		stdBody, stdErr := io.ReadAll(std.Body)
		if std.StatusCode != resp.StatusCode || std.ContentLength != resp.ContentLength || std.Close != resp.Close {
			t.Fatalf("read differently from net/http: %q\nours %d len %d close %v\nstd  %d len %d close %v", data,
				resp.StatusCode, resp.ContentLength, resp.Close, std.StatusCode, std.ContentLength, std.Close)
		}
		if (bodyErr == nil) == (stdErr == nil) && !bytes.Equal(body, stdBody) {
			t.Fatalf("body %q, net/http %q: %q", body, stdBody, data)
		}
	})
}
