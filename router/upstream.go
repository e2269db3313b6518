package router

import (
	"bytes"
	"context"
	"io"
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
		req, err := http.NewRequestWithContext(ctx, in.method, w.url+in.uri, nil)
		if err != nil {
			return nil, err
		}
		setBody(req, in.body)
		return req, nil
	}
	// An empty URL parses without error into an empty URL struct, which
	// then takes the worker's URL: one URL allocated, not two.
	req, err := http.NewRequestWithContext(ctx, in.method, "", nil)
	if err != nil {
		return nil, err
	}
	u := req.URL
	*u = *w.base
	u.Path, u.RawPath, u.RawQuery, u.ForceQuery = in.url.Path, in.url.RawPath, in.url.RawQuery, in.url.ForceQuery
	req.Host = u.Host
	setBody(req, in.body)
	return req, nil
}

// setBody gives req the buffered body as http.NewRequest does for a
// *bytes.Reader (ContentLength, a replayable GetBody, NoBody when empty),
// with one reader that closes itself instead of a reader in a NopCloser.
func setBody(req *http.Request, body []byte) {
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return
	}
	req.Body = newBodyReader(body)
	req.GetBody = func() (io.ReadCloser, error) { return newBodyReader(body), nil }
}

// bodyReader is a buffered request body sent to a worker.
type bodyReader struct{ bytes.Reader }

func newBodyReader(b []byte) *bodyReader {
	r := new(bodyReader)
	r.Reset(b)
	return r
}

// Close does nothing: the bytes stay with the request, for a retry.
func (*bodyReader) Close() error { return nil }
