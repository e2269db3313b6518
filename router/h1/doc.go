// Package h1 is the router's client for workers: an http.RoundTripper that
// speaks plain HTTP/1.1 over kept-alive connections and does each round
// trip on the caller's goroutine.
//
// Why not net/http's Transport: it runs two goroutines per connection (a
// reader and a writer) and hands every request and response between them
// and the caller over channels, which costs several goroutine switches and
// a dozen allocations per request; in front of a fast worker that was a
// quarter of the router's CPU time. A proxy needs none of that: it writes a
// buffered request and reads the answer, in order, on one connection at a
// time. What a worker speaks is small — HTTP/1.1, Content-Length or chunked
// bodies, keep-alive — and net/http's own pieces parse it here
// (http.ReadResponse, with its chunked and length-delimited bodies), so
// only connection reuse and request writing are this package's code.
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
// after IdleTimeout and by CloseIdleConnections.
//
// Not kept: net/http writes a request body while it already reads the
// answer, so a server that answers early (413, say) without reading the
// body is heard at once. Here the body is written first; such an answer is
// heard once the body is written, or the request's context ends the wait.
// Workers read whole requests before they answer.
package h1
