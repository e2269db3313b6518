package router

import (
	"bytes"
	"context"
	"net/http"
)

// upstreamRequest is in's request to worker w: in's method, path, query
// and body at w's address. Its URL is a copy of the worker's parsed one
// with the client's path and query, which writes the same request line as
// parsing the worker's URL joined with the client's request URI (what the
// fallback does, for a worker URL with a path of its own), without a URL
// parse per request.
func upstreamRequest(ctx context.Context, in *inbound, w *Worker) (*http.Request, error) {
	if w.base == nil || in.url == nil || in.url.Opaque != "" {
		return http.NewRequestWithContext(ctx, in.method, w.url+in.uri, bytes.NewReader(in.body))
	}
	req, err := http.NewRequestWithContext(ctx, in.method, "", bytes.NewReader(in.body))
	if err != nil {
		return nil, err
	}
	u := *w.base
	u.Path, u.RawPath, u.RawQuery, u.ForceQuery = in.url.Path, in.url.RawPath, in.url.RawQuery, in.url.ForceQuery
	req.URL, req.Host = &u, u.Host
	return req, nil
}
