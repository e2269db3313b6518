package router

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// The request to a worker has the request line and Host that joining the
// worker's URL with the client's request URI and parsing it gives.
func TestUpstreamRequestMatchesJoinedURL(t *testing.T) {
	for _, workerURL := range []string{"http://127.0.0.1:8000", "http://h:1/prefix", "http://h:", "http://[::1]:9"} {
		w := newWorker(workerURL, 1, nil)
		for _, target := range []string{"/v1/completions", "/a%2Fb/c?x=1&y=%20", "/p?", "/weird!path*(x)", "/%7euser"} {
			cu, err := url.ParseRequestURI(target)
			if err != nil {
				t.Fatal(err)
			}
			in := &inbound{method: http.MethodPost, uri: cu.RequestURI(), url: cu, body: []byte("{}")}
			got, out, err := upstreamRequest(t.Context(), in, w)
			if err != nil {
				t.Fatal(err)
			}
			want, err := http.NewRequestWithContext(t.Context(), in.method, workerURL+in.uri, bytes.NewReader(in.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.URL.RequestURI() != want.URL.RequestURI() || got.Host != want.Host || got.URL.Host != want.URL.Host || got.URL.Scheme != want.URL.Scheme {
				t.Errorf("%s + %s: %s %s host %s, want %s %s host %s", workerURL, target,
					got.URL.Scheme, got.URL.RequestURI(), got.Host, want.URL.Scheme, want.URL.RequestURI(), want.Host)
			}
			if got.Method != want.Method || got.Proto != want.Proto || got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor ||
				got.ContentLength != want.ContentLength || len(got.Header) != 0 || got.Context() != want.Context() {
				t.Errorf("%s + %s: request %+v, want %+v", workerURL, target, got, want)
			}
			if got.GetBody == nil {
				t.Fatal("body not replayable")
			}
			replay, _ := got.GetBody()
			for _, b := range []io.Reader{got.Body, replay} {
				if sent, _ := io.ReadAll(b); string(sent) != "{}" {
					t.Errorf("body %q, want {}", sent)
				}
			}
			// Given back, the parts serve the next request clean.
			got.Header.Set("X-Stale", "1")
			out.release(got)
		}
	}
}
