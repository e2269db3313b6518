package router

import (
	"encoding/json"
	"net/http"
)

// Error types in the router's OpenAI-shaped error bodies. They are stable:
// the trial runner's failure classifier and the driver branch on them.
//
// An error a vLLM server also answers has vLLM's type (target/sim answers
// the same): the serving layer's names for a bad or unknown request
// (BadRequestError, NotFoundError), and for errors vLLM raises as HTTP
// exceptions the status's reason phrase, as its exception handler writes
// it. The router's own conditions, which no engine has, keep their names.
const (
	ErrTypeInvalidRequest   = "BadRequestError"          // 400: body is not a JSON object, prompt too deep, bad X-Run-ID, bad admin input
	ErrTypeNotFound         = "NotFoundError"            // 404: unknown worker on an admin route, or a path pass-through does not allow
	ErrTypeUnauthorized     = "Unauthorized"             // 401: missing or wrong API key (or admin key on admin routes)
	ErrTypeMethodNotAllowed = "Method Not Allowed"       // 405: wrong method on a known route
	ErrTypePayloadTooLarge  = "Request Entity Too Large" // 413: body over max_payload_size (or what a worker accepts)
	ErrTypeBodyReadTimeout  = "Request Timeout"          // 408: the body did not arrive within body_read_timeout_secs

	ErrTypeNoAvailableWorkers = "no_available_workers" // 503: no healthy worker with a closed circuit
	ErrTypePoolExhausted      = "pool_exhausted"       // 503: attempts spent while workers were saturated
	ErrTypeQueueFull          = "queue_full"           // 429: in-flight limit reached and the queue is full
	ErrTypeQueueTimeout       = "queue_timeout"        // 408: waited queue_timeout_secs for a slot
	ErrTypeUpstreamError      = "upstream_error"       // 502: workers failed (transport or 5xx) on every attempt
	ErrTypeUpstreamTimeout    = "upstream_timeout"     // 504: request_timeout_secs passed before a response
	ErrTypePDConnectorTimeout = "pd_connector_timeout" // 504: the prefill leg passed prefill_timeout_secs
	ErrTypeAdminDisabled      = "admin_disabled"       // 403: admin route while no admin key is configured
	ErrTypeTooManyConnections = "too_many_connections" // 503: max_connections client connections are open
)

// errStreamBroken is how request_errors_total counts a response the worker
// broke off after it had started (no error body can be sent then).
const errStreamBroken = "upstream_stream_broken"

// apiError is an error the router answers itself.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    int    `json:"code"`
	// pool_exhausted details.
	Retries      *int `json:"retries,omitempty"`
	PoolSize     *int `json:"pool_size,omitempty"`
	OpenCircuits *int `json:"open_circuits,omitempty"`
	// pd_connector_timeout details.
	Leg         string   `json:"leg,omitempty"`
	TimeoutSecs *float64 `json:"timeout_secs,omitempty"`
	RequestID   string   `json:"request_id,omitempty"`
}

func (e *apiError) Error() string { return e.Type + ": " + e.Message }

func newAPIError(status int, typ, msg string) *apiError {
	return &apiError{Status: status, Message: msg, Type: typ, Code: status}
}

// writeError answers with the OpenAI error shape
// {"error":{"message","type","param","code"}}.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
