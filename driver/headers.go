package driver

import (
	"maps"
	"net/http"
	"slices"
)

// RequestIDHeader carries Workload.RequestIDPrefix + the request's index,
// as vllm bench serve's --request-id-prefix does.
const RequestIDHeader = "X-Request-Id"

// baseHeader is what every request carries: the content headers, the
// workload's headers, the config's (which win), then the bearer key.
func (c Config) baseHeader() http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	for _, m := range []map[string]string{c.Workload.Headers, c.Headers} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			h.Set(k, m[k])
		}
	}
	if c.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.APIKey)
	}
	return h
}
