package router

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/autoinfer/autoinfer/router/h1"
)

// upstreamRequest is in's request to worker w: in's method, path, query
// and body at w's address. Its URL is a copy of the worker's parsed one
// with the client's path and query, which writes the same request line as
// parsing the worker's URL joined with the client's request URI (what the
// fallback does, for a worker URL with a path of its own), without a URL
// parse per request.
//
// The URL, header map and body reader come from an outbound (nil for the
// fallback) that the caller gives back with release once the round trip
// is over.
func upstreamRequest(ctx context.Context, in *inbound, w *Worker) (*http.Request, *outbound, error) {
	if w.base == nil || in.url == nil || in.url.Opaque != "" || !validMethod(in.method) {
		req, err := http.NewRequestWithContext(ctx, in.method, w.url+in.uri, nil)
		if err != nil {
			return nil, nil, err
		}
		setBody(req, in.body)
		return req, nil, nil
	}
	o := outbounds.Get().(*outbound)
	u := &o.url
	*u = *w.base
	u.Path, u.RawPath, u.RawQuery, u.ForceQuery = in.url.Path, in.url.RawPath, in.url.RawQuery, in.url.ForceQuery
	// What http.NewRequestWithContext sets, with the body as setBody
	// gives it; WithContext copies the request, the one allocation.
	req := &http.Request{Method: in.method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: o.header, Host: u.Host, ContentLength: int64(len(in.body))}
	if len(in.body) == 0 {
		req.Body, req.GetBody = http.NoBody, noBody
	} else {
		o.data = in.body
		o.body.Reset(in.body)
		req.Body, req.GetBody = &o.body, o.replay
	}
	return req.WithContext(ctx), o, nil
}

// outbound holds what a request to a worker is built from, reused from
// one request to the next (outbounds): its URL, header map, body reader,
// and the replay function bound to it once.
type outbound struct {
	url    url.URL
	header http.Header
	body   bodyReader
	data   []byte // the body, for replays
	replay func() (io.ReadCloser, error)
}

var outbounds = sync.Pool{New: func() any {
	o := &outbound{header: make(http.Header, 8)}
	o.replay = o.newBody
	return o
}}

// newBody is a fresh reader of the body, for a replay: the first one may
// still be held by the transport.
func (o *outbound) newBody() (io.ReadCloser, error) { return newBodyReader(o.data), nil }

// maxOutboundFields bounds the header map an outbound keeps for the next
// request.
const maxOutboundFields = 64

// release gives o back once req's round trip is over, when the router's
// Transport (h1; r.upstream is always one, see New) served it: h1 is done with a request when RoundTrip
// returns (it writes the whole request before it reads the answer). A
// request the fallback (net/http) took is left to the garbage collector:
// net/http may still write it after RoundTrip returned.
func (o *outbound) release(req *http.Request) {
	if o == nil || !h1.Speaks(req) {
		return
	}
	if len(o.header) > maxOutboundFields {
		o.header = make(http.Header, 8)
	}
	clear(o.header)
	o.url, o.data = url.URL{}, nil
	o.body.Reset(nil)
	outbounds.Put(o)
}

func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// validMethod is net/http's check of a request's method (a non-empty
// token), which NewRequestWithContext makes.
func validMethod(m string) bool { return httpguts.ValidHeaderFieldName(m) }

// setBody gives req the buffered body as http.NewRequest does for a
// *bytes.Reader (ContentLength, a replayable GetBody, NoBody when empty),
// with one reader that closes itself instead of a reader in a NopCloser.
func setBody(req *http.Request, body []byte) {
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body, req.GetBody = http.NoBody, noBody
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
