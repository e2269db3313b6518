package routerconfig

import (
	"fmt"
	"strings"

	"github.com/autoinfer/autoinfer/trials/field"
)

// DefaultRequestIDHeaders are read, in order, when request_id_headers is
// empty: vllm-router's list.
func DefaultRequestIDHeaders() []string {
	return []string{"X-Request-Id", "X-Correlation-Id", "X-Trace-Id", "Request-Id"}
}

// ResolvedRequestIDHeaders is RequestIDHeaders or, when empty, the defaults.
func (c Config) ResolvedRequestIDHeaders() []string {
	if len(c.RequestIDHeaders) == 0 {
		return DefaultRequestIDHeaders()
	}
	return c.RequestIDHeaders
}

// validateRequestIDHeaders checks that every name can be a header field
// name (an RFC 9110 token).
func (c Config) validateRequestIDHeaders(l *field.Errors) {
	for i, h := range c.RequestIDHeaders {
		if h == "" || strings.IndexFunc(h, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			l.Add(fmt.Sprintf("router.request_id_headers[%d]", i), "must be a header name (letters, digits, !#$%%&'*+-.^_`|~), got %q", h)
		}
	}
}

func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}
