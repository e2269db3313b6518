package router

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/router/policy"
)

// inbound is a validated client request, buffered so that retries can
// resend it to another worker.
type inbound struct {
	route  string // metrics label
	method string
	uri    string // path and query, sent to the worker as is
	header http.Header
	body   []byte
	reqID  string
	runID  string
	policy policy.Request
	usage  *usage // from the relayed response, for per-run accounting
	// aborted is set (to the error type it is counted as) when a response
	// was cut after it started: the worker broke off, or request_timeout_secs
	// passed mid-stream. The client connection is then cut too, so the client
	// sees the truncation instead of a clean end.
	aborted string
	// patchJSON, when set, rewrites a successful non-streaming JSON answer
	// before it is relayed (PD mode fills in the prefill leg's cached_tokens).
	patchJSON func([]byte) []byte
}

// Headers read for a request id, in order, as vllm-router does.
var requestIDHeaders = []string{"X-Request-Id", "X-Correlation-Id", "X-Trace-Id", "Request-Id"}

// RunIDHeader carries the trial id; requests with it are counted per run.
const RunIDHeader = "X-Run-ID"

// requestID returns the client's id or a new one.
func requestID(h http.Header) string {
	for _, k := range requestIDHeaders {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return "req-" + strings.ToLower(rand.Text())
}

// readBody reads at most limit bytes; more is a 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	tooLarge := newAPIError(http.StatusRequestEntityTooLarge, ErrTypePayloadTooLarge,
		fmt.Sprintf("request body exceeds max_payload_size (%d bytes)", limit))
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, "reading request body: "+err.Error())
	}
	return body, nil
}

// openAIBody holds the fields routing needs; unmarshalling into it also
// checks that the body is one JSON object.
type openAIBody struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`   // completions, generate
	Messages []chatMessage   `json:"messages"` // chat
	Input    json.RawMessage `json:"input"`    // embeddings, responses
	Text     json.RawMessage `json:"text"`     // generate
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parseOpenAI validates an inference body and extracts the model and the
// text cache_aware matches on.
func parseOpenAI(body []byte) (model, text string, apiErr *apiError) {
	var b openAIBody
	if err := json.Unmarshal(body, &b); err != nil {
		return "", "", newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, "request body is not a valid JSON object: "+err.Error())
	}
	var sb strings.Builder
	for _, raw := range []json.RawMessage{b.Prompt, b.Input, b.Text} {
		appendText(&sb, raw)
	}
	for _, m := range b.Messages {
		sb.WriteString(m.Role)
		sb.WriteByte(':')
		appendText(&sb, m.Content)
		sb.WriteByte('\n')
	}
	return b.Model, sb.String(), nil
}

// appendText renders a prompt-like JSON value as text: strings as they are,
// arrays element by element (chat content parts by their "text"), anything
// else (token ids) as its JSON.
func appendText(sb *strings.Builder, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			sb.WriteString(s)
			return
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			for _, it := range items {
				appendText(sb, it)
			}
			return
		}
	case '{':
		var part struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(raw, &part) == nil && part.Text != nil {
			appendText(sb, part.Text)
			return
		}
	}
	sb.Write(raw)
	sb.WriteByte(' ')
}

// hashKey is consistent_hash's key: X-Session-ID, X-User-ID, Authorization,
// the client IP, else a hash of the body.
func hashKey(r *http.Request, body []byte) string {
	for _, k := range []string{"X-Session-ID", "X-User-ID", "Authorization"} {
		if v := r.Header.Get(k); v != "" {
			return k + ":" + v
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && host != "" {
		return "ip:" + host
	}
	return "body:" + strconv.FormatUint(policy.Hash64(string(body)), 16)
}
