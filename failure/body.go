package failure

import (
	"encoding/json"
	"strconv"
)

// ErrorBody is the part of a router's OpenAI-shaped error body the
// classifier reads: {"error":{"message","type","param","code", …}}. The
// router puts type-specific details (retries, pool_size, open_circuits for
// pool_exhausted; leg, timeout, request_id for pd_connector_timeout) either
// inside the error object or next to it; ParseErrorBody accepts both.
type ErrorBody struct {
	Status       int     `json:"status,omitempty"`
	Type         string  `json:"type"`
	Message      string  `json:"message,omitempty"`
	Retries      int     `json:"retries,omitempty"`
	PoolSize     int     `json:"pool_size,omitempty"`
	OpenCircuits int     `json:"open_circuits,omitempty"`
	Leg          string  `json:"leg,omitempty"`
	TimeoutSecs  float64 `json:"timeout_secs,omitempty"`
	RequestID    string  `json:"request_id,omitempty"`
}

// ParseErrorBody reads an HTTP error response. ok is false when body is not
// an OpenAI-shaped error with a type.
func ParseErrorBody(status int, body []byte) (ErrorBody, bool) {
	var outer map[string]json.RawMessage
	if json.Unmarshal(body, &outer) != nil {
		return ErrorBody{}, false
	}
	var inner map[string]json.RawMessage
	if raw, ok := outer["error"]; !ok || json.Unmarshal(raw, &inner) != nil {
		return ErrorBody{}, false
	}
	// Inner keys win over outer ones.
	get := func(key string) json.RawMessage {
		if v, ok := inner[key]; ok {
			return v
		}
		return outer[key]
	}
	b := ErrorBody{
		Status:       status,
		Type:         str(get("type")),
		Message:      str(get("message")),
		Retries:      int(num(get("retries"))),
		PoolSize:     int(num(get("pool_size"))),
		OpenCircuits: int(num(get("open_circuits"))),
		Leg:          str(get("leg")),
		TimeoutSecs:  num(get("timeout_secs")),
		RequestID:    str(get("request_id")),
	}
	if b.TimeoutSecs == 0 {
		b.TimeoutSecs = num(get("timeout"))
	}
	if b.Type == "" {
		return ErrorBody{}, false
	}
	return b, true
}

func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// num reads a JSON number, or a number in a string ("30", "30s").
func num(raw json.RawMessage) float64 {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f
	}
	s := str(raw)
	if n := len(s); n > 0 && s[n-1] == 's' {
		s = s[:n-1]
	}
	f, _ = strconv.ParseFloat(s, 64)
	return f
}
