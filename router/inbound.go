package router

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/router/prompt"
)

// inbound is a validated client request, buffered so that retries can
// resend it to another worker.
type inbound struct {
	route  string // metrics label
	method string
	uri    string   // path and query, sent to the worker as is
	url    *url.URL // the client's request URL (uri parsed)
	header http.Header
	body   []byte
	reqID  string
	// reqIDHeader is []string{reqID} as the client's answer carries it,
	// shared by the request to the worker when its id is the same (a PD
	// leg has its own).
	reqIDHeader []string
	runID       string
	// admitted is set once the request passed validation and backpressure:
	// only admitted requests are counted per run.
	admitted bool
	policy   policy.Request
	usage    *usage // from the relayed response, for per-run accounting
	// aborted is set (to the error type it is counted as) when a response
	// was cut after it started: the worker broke off, or request_timeout_secs
	// passed mid-stream. The client connection is then cut too, so the client
	// sees the truncation instead of a clean end.
	aborted string
	// patchJSON, when set, rewrites a successful non-streaming JSON answer
	// before it is relayed (PD mode fills in the prefill leg's cached_tokens).
	patchJSON func([]byte) []byte
}

// RunIDHeader carries the trial id; requests with it are counted per run.
const RunIDHeader = "X-Run-ID"

// runIDKey is RunIDHeader in http.Header's canonical form ("X-Run-Id"):
// looked up directly, it is not canonicalised (and allocated) per request.
const runIDKey = "X-Run-Id"

// firstValue is h.Get(key) for a key already canonical.
func firstValue(h http.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// requestIDs makes the ids of requests that come without one: a random
// prefix per router and a counter. They are unique across routers and
// restarts like a random id per request, without reading crypto/rand for
// every request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	return &requestIDs{prefix: "req-" + strings.ToLower(rand.Text()[:16]) + "-"}
}

// of returns the client's id from the first of names present in h (the
// router's request_id_headers, in canonical form), or a new one.
func (g *requestIDs) of(h http.Header, names []string) string {
	for _, k := range names {
		if v := h[k]; len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	var buf [64]byte
	return string(strconv.AppendUint(append(buf[:0], g.prefix...), g.n.Add(1), 36))
}

// openAIBody holds the fields routing needs; unmarshalling into it also
// checks that the body is one JSON object.
type openAIBody struct {
	Model    string        `json:"model"`
	Prompt   bodySlice     `json:"prompt"`   // completions, generate
	Messages []chatMessage `json:"messages"` // chat
	Input    bodySlice     `json:"input"`    // embeddings, responses
	Text     bodySlice     `json:"text"`     // generate
}

type chatMessage struct {
	Role    string    `json:"role"`
	Content bodySlice `json:"content"`
}

// bodySlice is a JSON value as the slice of the request body it was
// decoded from: json.RawMessage would copy it, and for a 200 MiB prompt
// that copy was 200 MiB the body budget did not count. json.Unmarshal
// hands UnmarshalJSON a slice of its input, which the request keeps
// unchanged while the value is used; were it ever another buffer, only
// cache_aware's text would suffer, never the body sent to the worker.
type bodySlice []byte

func (s *bodySlice) UnmarshalJSON(b []byte) error {
	*s = b
	return nil
}

// parseOpenAI validates an inference body and extracts the model and the
// text cache_aware matches on. Extraction is one linear pass over each
// prompt field (router/prompt) into one buffer sized for the text at most
// (which readBody has reserved: textBytes); a prompt nested deeper than
// prompt.MaxDepth is refused.
func parseOpenAI(body []byte) (model, text string, apiErr *apiError) {
	var b openAIBody
	if err := json.Unmarshal(body, &b); err != nil {
		return "", "", badJSON(err)
	}
	// The text is no longer than the JSON it comes from, plus each
	// message's "role:" and newline (and a space after a value rendered
	// as JSON).
	size := len(b.Prompt) + len(b.Input) + len(b.Text) + 3
	for _, m := range b.Messages {
		size += len(m.Role) + 3 + len(m.Content)
	}
	buf := make([]byte, 0, size)
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"prompt", b.Prompt}, {"input", b.Input}, {"text", b.Text}} {
		var err error
		if buf, err = prompt.AppendText(buf, f.raw); err != nil {
			return "", "", badPrompt(f.name, err)
		}
	}
	for i, m := range b.Messages {
		buf = append(append(buf, m.Role...), ':')
		var err error
		if buf, err = prompt.AppendText(buf, m.Content); err != nil {
			return "", "", badPrompt(fmt.Sprintf("messages[%d].content", i), err)
		}
		buf = append(buf, '\n')
	}
	if len(buf) == 0 {
		return b.Model, "", nil
	}
	// The text as a string without a second copy (strings.Builder's way):
	// buf is not written again.
	return b.Model, unsafe.String(&buf[0], len(buf)), nil
}

func badPrompt(field string, err error) *apiError {
	e := newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, field+": "+err.Error())
	e.Param = field
	return e
}

// hashKey is consistent_hash's key: X-Session-ID, X-User-ID, Authorization,
// the client IP, else a hash of the body. When the router checks an API
// key, Authorization is that one shared key, which says nothing about the
// user, and is skipped.
func hashKey(r *http.Request, body []byte, keyed bool) string {
	for _, k := range []string{"X-Session-ID", "X-User-ID", "Authorization"} {
		if k == "Authorization" && keyed {
			continue
		}
		if v := r.Header.Get(k); v != "" {
			return k + ":" + v
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && host != "" {
		return "ip:" + host
	}
	return "body:" + strconv.FormatUint(policy.Hash64(string(body)), 16)
}
