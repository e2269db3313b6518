package routertest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Client sends a test's requests. Transport errors fail the test in the
// synchronous helpers; a body cut off mid-way (a stream the router aborted)
// is reported in Response.Err instead, since tests check for exactly that.
type Client struct {
	t  testing.TB
	hc *http.Client
}

// NewClient returns a client over TCP with its own connection pool (no
// environment proxy, no shared http.DefaultTransport), whose idle
// connections are closed when the test ends.
func NewClient(t testing.TB) *Client {
	return newClient(t, &http.Transport{Proxy: nil, DisableCompression: true})
}

// Client returns a client that dials through n. Use it inside the bubble
// that created n.
func (n *Network) Client(t testing.TB) *Client {
	return newClient(t, &http.Transport{Proxy: nil, DialContext: n.DialContext, DisableCompression: true})
}

func newClient(t testing.TB, tr *http.Transport) *Client {
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{t: t, hc: &http.Client{Transport: tr}}
}

// HTTP is the underlying client, for libraries that take one (the OpenAI
// client, target/scrape).
func (c *Client) HTTP() *http.Client { return c.hc }

// Response is a whole answer: status, headers and body as read. Err is set
// when reading the body failed (a truncated stream) or, for Go, when the
// request itself failed (then Status is 0).
type Response struct {
	Status int
	Header http.Header
	Body   string
	Err    error
}

// ErrorType is the body's OpenAI error type, "" if the body is not an
// OpenAI error.
func (r Response) ErrorType() string { return ErrorType(r.Body) }

// newRequest builds a request with ctx; headers are name, value pairs. A
// non-empty body is sent as application/json.
func newRequest(ctx context.Context, method, url, body string, headers ...string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req, nil
}

// Post sends a JSON body with headers (name, value pairs) and reads the
// whole answer.
func (c *Client) Post(url, body string, headers ...string) Response {
	c.t.Helper()
	return c.Call(context.Background(), http.MethodPost, url, body, headers...)
}

// Get reads url.
func (c *Client) Get(url string) Response {
	c.t.Helper()
	return c.Call(context.Background(), http.MethodGet, url, "")
}

// Call sends any request and reads the whole answer; a transport error
// fails the test.
func (c *Client) Call(ctx context.Context, method, url, body string, headers ...string) Response {
	c.t.Helper()
	req, err := newRequest(ctx, method, url, body, headers...)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return readResponse(resp)
}

// Go sends a request in the background; the channel yields its answer once
// read to the end (Status 0 and Err set if the request failed). It never
// touches the test, so it may outlive a failed one; cancel ctx to stop it.
func (c *Client) Go(ctx context.Context, method, url, body string, headers ...string) <-chan Response {
	ch := make(chan Response, 1)
	go func() {
		req, err := newRequest(ctx, method, url, body, headers...)
		if err != nil {
			ch <- Response{Err: err}
			return
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			ch <- Response{Err: err}
			return
		}
		ch <- readResponse(resp)
	}()
	return ch
}

// Send sends a request and returns the open response, for tests that read
// a stream piece by piece. The caller closes the body.
func (c *Client) Send(ctx context.Context, method, url, body string, headers ...string) (*http.Response, error) {
	req, err := newRequest(ctx, method, url, body, headers...)
	if err != nil {
		return nil, err
	}
	return c.hc.Do(req)
}

func readResponse(resp *http.Response) Response {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Err: err}
}

// ErrorType extracts error.type from an OpenAI error body
// {"error":{"message","type","param","code"}}; "" if body is not one.
func ErrorType(body string) string {
	var e struct {
		Error *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Type
}
