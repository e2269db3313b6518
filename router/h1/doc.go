// Package h1 is the router's HTTP/1.1 on both sides: Transport, its
// client for workers, and Server, its front server for clients.
//
// # Transport
//
// An http.RoundTripper that speaks plain HTTP/1.1 over kept-alive
// connections and does each round trip on the caller's goroutine.
//
// Why not net/http's Transport: it runs two goroutines per connection (a
// reader and a writer) and hands every request and response between them
// and the caller over channels, which costs several goroutine switches and
// a dozen allocations per request; in front of a fast worker that was a
// quarter of the router's CPU time. A proxy needs none of that: it writes a
// buffered request and reads the answer, in order, on one connection at a
// time. What a worker speaks is small — HTTP/1.1, Content-Length or chunked
// bodies, keep-alive: an answer's head is read into one string and its
// fields are substrings of it (head.go, response.go; a fuzz target holds
// the reading to http.ReadResponse's), chunked bodies are net/http's
// decoder (httputil.NewChunkedReader). A differential fuzz target
// (transport_diff_test.go) feeds this Transport and net/http's the same
// worker byte streams and holds them to handing each caller the same
// answer.
// valyala/fasthttp does the same but has no context cancellation and its
// own request and response types; every caller of the router's client
// (attempts, health checks, load scrapes) speaks net/http.
//
// Anything this package does not speak goes to the fallback RoundTripper
// unchanged: https, bodies of unknown length, Expect: 100-continue,
// trailers.
//
// Behaviour kept from net/http's Transport: a request on a reused
// connection that fails before any byte of the answer arrived (the worker
// closed the idle connection at the same moment) is sent again once on a
// fresh connection, when its body can be replayed (GetBody); cancelling the
// request's context aborts the round trip and a body being read; a body
// closed before its end closes its connection; idle connections are closed
// after IdleTimeout and by CloseIdleConnections; a read is pending on every
// idle connection, and one on which the worker speaks unasked or that it
// closes is discarded at once (idle.go: the goroutine that reads takes turns
// with the round trips, so a reused connection's answer arrives through
// it). Stricter than net/http: a connection is pooled only when nothing was
// read past its answer's end (net/http pools it first and looks after, so
// a request sent at once could read those bytes as its answer).
//
// Not kept: net/http writes a request body while it already reads the
// answer, so a server that answers early (413, say) without reading the
// body is heard at once. Here the body is written first; such an answer is
// heard once the body is written, or the request's context ends the wait.
// Workers read whole requests before they answer.
//
// # Server
//
// Serves a net/http Handler (the router's, unchanged) over HTTP/1.1. Why
// not net/http's server: in front of a fast worker it was a third of the
// router's CPU — per request a goroutine for a background read that is
// then aborted (deadline changes, a wake-up and a wait), a context, a
// dozen allocations parsing the head, header sorting, and a read that
// finds nothing. This server keeps one connection's requests on two
// goroutines that take turns (watch.go), reads a head into one string,
// applies deadlines only when a socket is read or written, and reuses a
// connection's answer state and its request: the *http.Request, its URL,
// header map and the array behind its header values are the connection's
// and are reset for each request. A handler must not use its request once
// it returned (net/http's rule too, which nothing there enforces); the
// strings in it are each request's own, so a value a handler keeps stays
// intact.
//
// What it keeps of net/http's behaviour: keep-alive (HTTP/1.1, and 1.0
// with keep-alive), Content-Length and chunked request bodies, Expect:
// 100-continue, HEAD, 204 and 304 without bodies, a small answer sent with
// a Content-Length in one write and a flushed or larger one chunked, a
// Date field, Content-Type sniffed when missing, http.ErrAbortHandler
// cutting the connection, a request context cancelled when the client
// leaves while the handler runs, ReadHeaderTimeout (new connections too)
// and IdleTimeout, Shutdown closing idle connections at once and letting
// answers in progress finish, and a lingering close (half-close, then read
// for up to 500 ms) so a client still sending a body hears a 413 or 429
// rather than a reset. What it refuses, in the OpenAI error shape and
// closing the connection: a head over MaxHeaderBytes (431), a malformed
// request line or field, a folded field line, a line that ends in a bare
// LF (a head is all CRLF: head.go), several Host fields or none in
// HTTP/1.1 (400), both Content-Length and Transfer-Encoding,
// several or non-decimal Content-Lengths (400), a transfer coding other
// than chunked (501), HTTP/2 or later (505), CONNECT (405), an Expect
// other than 100-continue (417). A malformed chunked body is the handler's
// read error (the router answers 400). Not served: HTTP/2, TLS, Upgrade
// and Hijack, request trailers (read and dropped).
//
// A request's context is its connection's (see Server): the router bounds
// each request's work with a context of its own.
package h1
