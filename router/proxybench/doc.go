// Package proxybench measures what a reverse proxy costs in front of an
// LLM server, with the embedded router and its peers side by side in one
// run: nginx, HAProxy (option http-no-delay) and a bare Go
// httputil.ReverseProxy, all in front of the same trivial upstream.
//
// Everything that is measured runs in its own process, so a proxy's CPU
// time is read from /proc without counting the load generator or the
// upstream: the test binary re-executes itself as the upstream, the router
// and the bare reverse proxy, nginx and HAProxy run as installed, and load
// comes from wrk (or, without wrk, from the test binary as a Go client).
// Figures are CPU per request and requests/s as ratios to nginx (medians of
// three interleaved runs) and streaming time to first byte added over a
// direct connection. The package holds only the benchmark; run it with
// `make bench-peers`, which installs the Debian packages nginx, haproxy and
// wrk. Peers that are not installed are skipped and named in the log.
package proxybench
