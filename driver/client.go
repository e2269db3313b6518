package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/driver/metrics"
)

// Client-side error types, used where the server gave none.
const (
	errTransport      = "transport_error" // no HTTP response: refused, reset, DNS
	errTimeout        = "timeout"         // the request outlived Config.Timeout
	errCancelled      = "cancelled"       // the run was cancelled
	errStream         = "stream_error"    // the stream broke or held malformed JSON
	errEmpty          = "empty_response"  // 200 but no chunk with choices
	errHTTP           = "http_error"      // an error status without an OpenAI error body
	errSessionAborted = "session_aborted" // a multi_turn turn not sent because an earlier turn failed
	// ErrNotSent marks a request never sent because the run stopped first
	// (Ctrl-C or max_seconds); it is not a failure.
	ErrNotSent = metrics.NotSent
	// ErrIncomplete marks a request in flight when the run stopped; it is
	// not a failure either (guidellm's "incomplete").
	ErrIncomplete = metrics.Incomplete
)

// newHTTPClient returns a client for many concurrent streams to one host:
// idle connections are kept for reuse up to the expected concurrency, no
// proxy is consulted and responses are not decompressed.
func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		// Below the servers' keep-alive timeouts (vLLM's uvicorn: 5 s;
		// the sim and the router: minutes): the client retires an idle
		// connection before a server closes it, which could race a send
		// on it into a transport error (a POST is not retried).
		IdleConnTimeout:    4 * time.Second,
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}}
}

// usage is the OpenAI usage object.
type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
}

// promptDetails is the usage's prompt_tokens_details.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// apiError is the OpenAI error object; vllm's older shape puts its fields at
// the top level next to "object": "error".
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// chunk is the part of an SSE event the driver reads.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// exchange is the raw timing of one request.
type exchange struct {
	send, first, last time.Time
	itls              []time.Duration
	// bursts counts ITLs whose event was already waiting in the client's
	// buffers when the previous event was handled (no read from the
	// connection between the two): the client was behind, so that ITL is
	// the client's, not the server's. lastReads is the read count at the
	// previous event with choices.
	bursts, lastReads int
	// Decoding state reused across the stream's events.
	dec             *json.Decoder
	src             bytes.Reader
	fed             int64 // bytes given to dec so far
	chunk           chunk
	text            strings.Builder
	usage           *usage
	status          int
	errType, errMsg string
	// detail is the server's own error message (or the transport error),
	// without the status prefix errMsg carries.
	detail string
	// errBody is an HTTP error response's body when it is JSON, kept (up to
	// maxErrorBody bytes) so typed router errors keep their details.
	errBody []byte
}

// maxErrorBody bounds the error body kept per failed request.
const maxErrorBody = 4 << 10

func (x *exchange) fail(typ, format string, args ...any) {
	x.errType, x.errMsg = typ, fmt.Sprintf(format, args...)
}

// do sends one request and reads its stream, timestamping with now. TTFT
// runs from send to the first event with a non-empty choices list (even a
// role-only or empty-text one), each later such event adds an ITL, and the
// last one ends E2EL, as vllm bench serve measures.
func do(ctx context.Context, client *http.Client, url string, body []byte, header http.Header, now func() time.Time) *exchange {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x, events := send(ctx, client, url, body, header, now)
	if events != nil {
		defer events.Close()
		x.readEvents(ctx, events, now)
		if x.errType == "" {
			drain(events, cancel)
		}
	}
	return x
}

// Bounds of drain: what an engine writes after [DONE] is the chunked
// body's end, a few bytes, at once.
const (
	drainWait  = time.Second
	drainBytes = 64 << 10
)

// drain reads body to its end after [DONE], so the transport keeps the
// connection for the next request as vllm bench serve's keep-alive
// session does: a body closed unread makes it drop the connection, and
// every request then dialled anew with a connect in its TTFT. Bounded in
// bytes and time (cancel ends the request) for a server that holds the
// stream open; the measurement was taken at [DONE] already.
func drain(body io.Reader, cancel context.CancelFunc) {
	stop := time.AfterFunc(drainWait, cancel)
	defer stop.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes))
}

// send posts one request and reads the answer's status. An error answer is
// read and recorded whole; for a 200 the body comes back with its events
// unread, and the caller must read (readEvents) and close it.
func send(ctx context.Context, client *http.Client, url string, body []byte, header http.Header, now func() time.Time) (*exchange, io.ReadCloser) {
	x := &exchange{}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		x.fail(errTransport, "building request: %v", err)
		return x, nil
	}
	req.Header = header
	if ctx.Err() != nil {
		// The run ended between dispatch and here: nothing leaves, so no
		// send time is recorded and the request counts as unsent.
		x.fail(classify(ctx, errCancelled), "not sent: %v", context.Cause(ctx))
		return x, nil
	}
	x.send = now()
	resp, err := client.Do(req)
	if err != nil {
		x.fail(classify(ctx, errTransport), "%v", err)
		return x, nil
	}
	x.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		typ, msg := parseError(b)
		if typ == "" {
			typ = errHTTP
		} else if len(b) <= maxErrorBody && json.Valid(b) {
			x.errBody = b
		}
		x.fail(typ, "HTTP %d: %s", resp.StatusCode, msg)
		x.detail = msg
		return x, nil
	}
	return x, resp.Body
}

// countingReader counts the reads that reach the connection.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// readEvents reads SSE data lines until [DONE] or the end of the body.
// Each data event is timestamped once, when its line has been read and
// before it is decoded, so decoding cost never shifts a measurement.
func (x *exchange) readEvents(ctx context.Context, body io.Reader, now func() time.Time) {
	cr := &countingReader{r: body}
	br := bufio.NewReaderSize(cr, 16<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if len(line) > 0 {
			if done := x.event(bytes.TrimRight(line, "\r\n"), now, cr.reads); done {
				return
			}
			if x.errType != "" {
				return
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			x.fail(classify(ctx, errStream), "reading stream: %v", err)
			return
		}
	}
	if x.first.IsZero() && x.errType == "" {
		x.fail(errEmpty, "the stream ended without a chunk with choices")
	}
}

// event handles one SSE line, read when the body had been read reads
// times, and reports whether the stream is done.
func (x *exchange) event(line []byte, now func() time.Time, reads int) bool {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return false // blank separator, comment (":"), event/id/retry field
	}
	t := now()
	data = bytes.TrimPrefix(data, []byte(" "))
	if string(data) == "[DONE]" {
		if x.first.IsZero() {
			x.fail(errEmpty, "the stream ended without a chunk with choices")
		}
		return true
	}
	// One decoder and one chunk serve every event of the stream: the
	// decoder keeps its scanner state and the emptied choices list its
	// storage, so an event costs no allocation beyond its text.
	if x.dec == nil {
		x.dec = json.NewDecoder(&x.src)
	}
	x.src.Reset(data)
	c := &x.chunk
	// Decoding into a reused element sets only the keys present, so the
	// old elements are zeroed first.
	clear(c.Choices[:cap(c.Choices)])
	c.Choices, c.Usage, c.Error = c.Choices[:0], nil, nil
	x.fed += int64(len(data))
	if err := x.dec.Decode(c); err != nil {
		x.fail(errStream, "decoding chunk: %v", err)
		return true
	}
	// Like json.Unmarshal, refuse anything after the object.
	if rest := data[len(data)-int(x.fed-x.dec.InputOffset()):]; len(bytes.TrimSpace(rest)) > 0 {
		x.fail(errStream, "decoding chunk: invalid data after the JSON object: %.40q", rest)
		return true
	}
	if c.Error != nil {
		typ := c.Error.Type
		if typ == "" {
			typ = errStream
		}
		x.fail(typ, "error in stream: %s", c.Error.Message)
		return true
	}
	if c.Usage != nil {
		x.usage = c.Usage
	}
	if len(c.Choices) == 0 {
		return false
	}
	if x.first.IsZero() {
		x.first = t
	} else {
		x.itls = append(x.itls, t.Sub(x.last))
		if reads == x.lastReads {
			x.bursts++
		}
	}
	x.last, x.lastReads = t, reads
	x.text.WriteString(c.Choices[0].Text)
	x.text.WriteString(c.Choices[0].Delta.Content)
	return false
}

// parseError extracts the error type and message from an error body in
// either of vllm's shapes; anything else becomes the message.
func parseError(b []byte) (typ, msg string) {
	var v struct {
		Error *apiError `json:"error"`
		apiError
	}
	if json.Unmarshal(b, &v) == nil {
		if v.Error != nil {
			return v.Error.Type, v.Error.Message
		}
		if v.Type != "" {
			return v.Type, v.Message
		}
	}
	return "", strings.TrimSpace(string(b))
}

// classify names why a request's context ended, else returns fallback.
func classify(ctx context.Context, fallback string) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errTimeout
	case ctx.Err() != nil:
		return errCancelled
	}
	return fallback
}
