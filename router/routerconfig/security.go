package routerconfig

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/autoinfer/autoinfer/trials/field"
)

// SecurityConfig is what makes a router safe to expose: who may call it,
// what reaches the workers, and how much one client can make it hold. It is
// inlined into Config (its keys sit directly under `router:`), and it never
// holds a key: only the names of the environment variables that do, so
// specs and ledger rows can be shared. docs/router.md "Security" is the
// user's view.
type SecurityConfig struct {
	// APIKeyEnv names the environment variable holding the key clients must
	// send as "Authorization: Bearer <key>" on inference routes, /v1/models
	// and pass-through. Empty: those routes are open.
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// AdminAPIKeyEnv names the variable holding the admin key. Routes that
	// change the worker set need it; without one they are disabled.
	AdminAPIKeyEnv string `yaml:"admin_api_key_env,omitempty" json:"admin_api_key_env,omitempty"`
	// WorkerAPIKeyEnv names the variable holding the key the router sends
	// workers as "Authorization: Bearer <key>" (requests, health checks and
	// queue scrapes alike).
	WorkerAPIKeyEnv string `yaml:"worker_api_key_env,omitempty" json:"worker_api_key_env,omitempty"`
	// ForwardClientAuth forwards the client's credential headers
	// (Authorization, Cookie, X-Api-Key, Api-Key) to workers. Off: workers
	// never see them.
	ForwardClientAuth bool `yaml:"forward_client_auth,omitempty" json:"forward_client_auth,omitempty"`
	// KeepUnderscoreHeaders forwards header fields whose names hold "_".
	// Off: they are dropped (nginx's default), since a worker that reads
	// "_" as "-" (CGI/WSGI style) would take Content_Length for a second
	// Content-Length.
	KeepUnderscoreHeaders bool `yaml:"keep_underscore_headers,omitempty" json:"keep_underscore_headers,omitempty"`
	// PassthroughRoutes are the paths other than the named routes that are
	// passed through to workers: exact paths, or prefixes ending in "/*".
	// Anything else is 404, so workers' control routes are unreachable.
	PassthroughRoutes []string `yaml:"passthrough_routes" json:"passthrough_routes"`

	// MaxBodyMemory bounds the request bytes held at once over all
	// requests. A body is reserved before it is read; one that does not fit
	// waits in the queue (queue_size, queue_timeout_secs).
	MaxBodyMemory int64 `yaml:"max_body_memory,omitempty" json:"max_body_memory,omitempty"`
	// MaxRunIDs caps the X-Run-ID values with live per-run series; the
	// least recently used run's series are deleted to admit a new one.
	MaxRunIDs int `yaml:"max_run_ids,omitempty" json:"max_run_ids,omitempty"`

	// ReadHeaderTimeoutSecs bounds reading a request's headers.
	ReadHeaderTimeoutSecs float64 `yaml:"read_header_timeout_secs,omitempty" json:"read_header_timeout_secs,omitempty"`
	// BodyReadTimeoutSecs bounds reading a request's body, from when it is
	// admitted to be read.
	BodyReadTimeoutSecs float64 `yaml:"body_read_timeout_secs,omitempty" json:"body_read_timeout_secs,omitempty"`
	// WriteIdleTimeoutSecs bounds one write to a client that stopped
	// reading. Streams are never cut for being long or slow to produce.
	WriteIdleTimeoutSecs float64 `yaml:"write_idle_timeout_secs,omitempty" json:"write_idle_timeout_secs,omitempty"`
	// IdleTimeoutSecs closes a keep-alive connection idle this long.
	IdleTimeoutSecs float64 `yaml:"idle_timeout_secs,omitempty" json:"idle_timeout_secs,omitempty"`
	// MinBodyRate (bytes per second) cuts a body that trickles: after the
	// first BodyRateGraceSecs of its body, a request must have sent at
	// least this much per second on average (0: no minimum).
	MinBodyRate float64 `yaml:"min_body_rate" json:"min_body_rate"`
	// MaxConnections caps the client connections open at once; one more
	// is answered 503 and closed (0: no cap).
	MaxConnections int `yaml:"max_connections" json:"max_connections"`
}

// BodyRateGraceSecs is how long a body may take before MinBodyRate
// applies: a slow start (a connection warming up) is not a trickle.
const BodyRateGraceSecs = 10

// Security defaults; docs/router.md explains each.
const (
	DefaultMaxBodyMemory         = 1 << 30
	DefaultMaxRunIDs             = 64
	DefaultReadHeaderTimeoutSecs = 10
	DefaultMinBodyRate           = 16 << 10
	DefaultMaxConnections        = 10000
	DefaultBodyReadTimeoutSecs   = 300
	DefaultWriteIdleTimeoutSecs  = 120
	DefaultIdleTimeoutSecs       = 120
)

// DefaultPassthroughRoutes are the OpenAI and vLLM serving routes the
// router does not name itself. vLLM's control routes (/pause, /sleep,
// /reset_prefix_cache, /update_weights, …) and every /admin route are left
// out on purpose.
func DefaultPassthroughRoutes() []string {
	return []string{
		"/v1/responses/*", "/v1/score", "/v1/rerank", "/v2/rerank", "/score", "/rerank",
		"/pooling", "/classify", "/tokenize", "/detokenize", "/invocations",
		"/v1/audio/transcriptions", "/v1/audio/translations", "/version", "/ping",
	}
}

// DefaultSecurityConfig is the security part of Default.
func DefaultSecurityConfig() SecurityConfig {
	return SecurityConfig{
		PassthroughRoutes:     DefaultPassthroughRoutes(),
		MaxBodyMemory:         DefaultMaxBodyMemory,
		MaxRunIDs:             DefaultMaxRunIDs,
		ReadHeaderTimeoutSecs: DefaultReadHeaderTimeoutSecs,
		BodyReadTimeoutSecs:   DefaultBodyReadTimeoutSecs,
		WriteIdleTimeoutSecs:  DefaultWriteIdleTimeoutSecs,
		IdleTimeoutSecs:       DefaultIdleTimeoutSecs,
		MinBodyRate:           DefaultMinBodyRate,
		MaxConnections:        DefaultMaxConnections,
	}
}

// validateSecurity checks the security settings and every configured
// worker URL against CheckWorkerURL.
func (c Config) validateSecurity(l *field.Errors) {
	s := c.SecurityConfig
	for _, e := range []struct{ key, name string }{{"api_key_env", s.APIKeyEnv}, {"admin_api_key_env", s.AdminAPIKeyEnv},
		{"worker_api_key_env", s.WorkerAPIKeyEnv}} {
		if e.name != "" && !validEnvName(e.name) {
			l.Add("router."+e.key, "must name an environment variable (letters, digits, _), not hold a key (got %d characters)", len(e.name))
		}
	}
	for i, p := range s.PassthroughRoutes {
		if err := checkRoutePattern(p); err != nil {
			l.Add(fmt.Sprintf("router.passthrough_routes[%d]", i), "%v", err)
		}
	}
	l.Check(field.AtLeast("router.max_body_memory", s.MaxBodyMemory, 1))
	if s.MaxBodyMemory >= 1 && s.MaxBodyMemory < c.MaxPayloadSize {
		l.Add("router.max_body_memory", "must be ≥ max_payload_size (%d), or bodies that size could never be read (got %d)", c.MaxPayloadSize, s.MaxBodyMemory)
	}
	l.Check(
		field.AtLeast("router.max_run_ids", s.MaxRunIDs, 1),
		field.Above("router.read_header_timeout_secs", s.ReadHeaderTimeoutSecs, 0),
		field.Above("router.body_read_timeout_secs", s.BodyReadTimeoutSecs, 0),
		field.Above("router.write_idle_timeout_secs", s.WriteIdleTimeoutSecs, 0),
		field.Above("router.idle_timeout_secs", s.IdleTimeoutSecs, 0),
		field.AtLeast("router.min_body_rate", s.MinBodyRate, 0),
		field.AtLeast("router.max_connections", s.MaxConnections, 0),
	)
	for _, list := range []struct {
		key  string
		urls []string
	}{{"worker_urls", c.WorkerURLs}, {"prefill", c.PrefillURLs}, {"decode", c.DecodeURLs}} {
		for i, u := range list.urls {
			// field.HTTPURL has already reported a URL that is not http(s).
			if field.HTTPURL("", u) != nil {
				continue
			}
			if err := CheckWorkerURL(u); err != nil {
				l.Add(fmt.Sprintf("router.%s[%d]", list.key, i), "%v", err)
			}
		}
	}
}

// validEnvName reports whether s can only be a variable's name. A key
// pasted by mistake (with '-', '.', '/', '+', '=') is refused without
// being echoed.
func validEnvName(s string) bool {
	for i, r := range s {
		letter := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

func checkRoutePattern(p string) error {
	prefix, wild := strings.CutSuffix(p, "/*")
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("must start with / (got %q)", p)
	case strings.Contains(prefix, "*"):
		return fmt.Errorf("* is allowed only as a final /* (got %q)", p)
	case strings.ContainsAny(p, "?#") || strings.Contains(p, "/../") || strings.HasSuffix(prefix, "/.."):
		return fmt.Errorf("must be a plain path (got %q)", p)
	case !wild && p != "/" && strings.HasSuffix(p, "/"):
		return fmt.Errorf("must not end with / (use /* for a prefix; got %q)", p)
	}
	return nil
}

// CheckWorkerURL accepts an http(s) URL with a host and an optional path,
// and nothing that could carry a secret or change what is requested: no
// user info, query or fragment. The error never echoes user info. The
// router applies it to the config and to every URL added through its
// admin routes.
func CheckWorkerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL (%q)", RedactURL(raw))
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("must not carry user info (credentials): use worker_api_key_env (got %q)", RedactURL(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL (got %q)", raw)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("must name a host (got %q)", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("must not have a query (got %q)", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("must not have a fragment (got %q)", raw)
	case u.Opaque != "":
		return fmt.Errorf("must be hierarchical (scheme://host; got %q)", raw)
	}
	return nil
}

// RedactURL hides a URL's user info (field.RedactURL), for the router's
// logs, metric labels and answers.
func RedactURL(raw string) string { return field.RedactURL(raw) }
