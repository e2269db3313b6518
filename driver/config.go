package driver

import (
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/trials/field"
)

// The driver's sub-package types under the names the rest of autoinfer uses.
type (
	// Workload is workload.Workload.
	Workload = workload.Workload
	// Arrival is arrival.Arrival.
	Arrival = arrival.Arrival
	// Summary is metrics.Summary.
	Summary = metrics.Summary
	// RequestRecord is metrics.RequestRecord.
	RequestRecord = metrics.RequestRecord
	// SLO is metrics.SLO.
	SLO = metrics.SLO
)

// Endpoints the driver can drive.
const (
	CompletionsEndpoint = "/v1/completions"
	ChatEndpoint        = "/v1/chat/completions"
)

// Defaults of Config's zero fields.
const (
	DefaultSessionHeader  = "X-Session-ID"
	DefaultSessionScheme  = "autoinfer-{trial_id}-{session}"
	DefaultRunIDHeader    = "X-Run-ID"
	DefaultWarmupRequests = 100
	DefaultTimeout        = 10 * time.Minute
	DefaultTrialID        = "default"
	// DefaultReadyCheckTimeout is vllm bench serve's --ready-check-timeout-sec default.
	DefaultReadyCheckTimeout = 600 * time.Second
	// WarmupRunIDSuffix is appended to the run id on warm-up requests.
	WarmupRunIDSuffix = "-warmup"
	// NoHeader as a header name turns that header off.
	NoHeader = "-"
)

// Config is one benchmark run.
type Config struct {
	// BaseURL is the server, e.g. http://127.0.0.1:8000 (no path).
	BaseURL string
	// Endpoint is CompletionsEndpoint (default) or ChatEndpoint.
	Endpoint string
	Model    string
	Workload Workload
	Arrival  Arrival
	// NumPrompts is the number of measured requests; 0 means the workload's
	// natural count (see workload.Build).
	NumPrompts int
	Seed       int64
	// TrialID seeds the stream together with Seed and names sessions. Runs
	// that must see byte-identical requests (an A/B of router policies) share
	// it; RunID tells them apart.
	TrialID string
	// RunID is the run-id header's value (default TrialID), so the router
	// counts requests and tokens per run.
	RunID string
	// SessionHeader (default X-Session-ID) carries SessionScheme rendered
	// with {trial_id}, {session} (the index of the first request of the
	// session: the request's own index unless multi_turn or a trace groups
	// it), {index} and {turn}. NoHeader turns it off.
	SessionHeader string
	SessionScheme string
	// RunIDHeader (default X-Run-ID) carries RunID; NoHeader turns it off.
	RunIDHeader string
	// WarmupRequests are sent and awaited before the measured run and
	// excluded from every metric: 0 means DefaultWarmupRequests, < 0 none.
	WarmupRequests int
	Goodput        SLO
	// Percentiles are reported besides 50, 90 and 99.
	Percentiles []float64
	// Timeout bounds each request (default 10 minutes).
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a client tuned for many
	// concurrent streams to one host.
	HTTPClient *http.Client
	// KeepText keeps each request's generated text in its record.
	KeepText bool
	// Backend and Label are copied into the summary (backend defaults to
	// openai or openai-chat by endpoint, as vllm names them).
	Backend string
	Label   string

	// APIKey is sent as "Authorization: Bearer …"; empty means the value
	// of the environment variable Workload.APIKeyEnv names, if any. It is
	// never written to a summary, record or error.
	APIKey string
	// Headers are sent with every request, after the workload's headers
	// (so they win) and before the session, run-id and request-id headers.
	Headers map[string]string
	// ReadyCheckTimeout bounds the ready check: before the warm-up one
	// request must succeed within it; a 4xx answer ends the run at once
	// with the server's message (*NotReadyError). 0 means
	// DefaultReadyCheckTimeout, < 0 skips the check.
	ReadyCheckTimeout time.Duration
	// Tokenizer generates and counts prompts; nil means the one
	// Workload.Tokenizer names (autoinfer/sim when that is empty).
	Tokenizer workload.Tokenizer
	// HTTPOverhead is added to every request's TTFT and E2E latency by
	// Simulate (not Run): the time the HTTP path takes in real time, which
	// the virtual clock does not run (trials' http_overhead_ms).
	HTTPOverhead time.Duration
	// HTTPInbound is the part of HTTPOverhead before the engine: Simulate
	// hands a request to the system this long after sending it, and
	// delivers its tokens HTTPOverhead − HTTPInbound after their emission
	// (trials' http_inbound_ms). At most HTTPOverhead.
	HTTPInbound time.Duration
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = CompletionsEndpoint
	}
	if c.Backend == "" {
		c.Backend = "openai"
		if c.Endpoint == ChatEndpoint {
			c.Backend = "openai-chat"
		}
	}
	if c.TrialID == "" {
		c.TrialID = DefaultTrialID
	}
	if c.RunID == "" {
		c.RunID = c.TrialID
	}
	if c.SessionHeader == "" {
		c.SessionHeader = DefaultSessionHeader
	}
	if c.SessionScheme == "" {
		c.SessionScheme = DefaultSessionScheme
	}
	if c.RunIDHeader == "" {
		c.RunIDHeader = DefaultRunIDHeader
	}
	if c.WarmupRequests == 0 {
		c.WarmupRequests = DefaultWarmupRequests
	}
	if c.WarmupRequests < 0 {
		c.WarmupRequests = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ReadyCheckTimeout == 0 {
		c.ReadyCheckTimeout = DefaultReadyCheckTimeout
	}
	if c.APIKey == "" && c.Workload.APIKeyEnv != "" {
		c.APIKey = os.Getenv(c.Workload.APIKeyEnv)
	}
	c.Workload = c.Workload.WithDefaults()
	c.Arrival = c.Arrival.Normalized()
	return c
}

// Validate checks every field and returns all problems joined, each a
// *field.Error naming its key (workload and arrival keys nested under
// "workload." and "arrival.").
func (c Config) Validate() error {
	var l field.Errors
	l.Nest("workload", c.Workload.Validate())
	l.Nest("arrival", c.Arrival.Validate())
	if c.Arrival.Kind == arrival.Sweep {
		l.Add("arrival.kind", "sweep is a series of runs (driver/sweep), not one run")
	}
	if u, err := url.Parse(c.BaseURL); c.BaseURL == "" {
		l.Add("base_url", "required")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.Add("base_url", "want http(s)://host:port, got %q", c.BaseURL)
	}
	if c.Endpoint != "" && c.Endpoint != CompletionsEndpoint && c.Endpoint != ChatEndpoint {
		l.Add("endpoint", "want %s or %s, got %q", CompletionsEndpoint, ChatEndpoint, c.Endpoint)
	}
	if c.Model == "" {
		l.Add("model", "required")
	}
	if c.NumPrompts < 0 {
		l.Add("num_prompts", "must be >= 0, got %d", c.NumPrompts)
	}
	if c.Timeout < 0 {
		l.Add("timeout", "must be > 0, got %v", c.Timeout)
	}
	if c.Goodput.TTFTMs < 0 || c.Goodput.TPOTMs < 0 || c.Goodput.E2ELMs < 0 {
		l.Add("goodput", "bounds must be > 0 ms, got %+v", c.Goodput)
	}
	if c.SessionHeader != NoHeader && c.SessionHeader != "" {
		if err := workload.CheckHeaderName(c.SessionHeader); err != nil {
			l.Add("session_header", "%v", err)
		}
	}
	if c.RunIDHeader != NoHeader && c.RunIDHeader != "" {
		if err := workload.CheckHeaderName(c.RunIDHeader); err != nil {
			l.Add("run_id_header", "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		if err := workload.CheckHeaderName(k); err != nil {
			l.Add("headers", "%v", err)
		} else if strings.ContainsAny(c.Headers[k], "\r\n") {
			l.Add("headers", "value of %s holds a line break", k)
		}
	}
	if strings.ContainsAny(c.APIKey, "\r\n") {
		l.Add("api_key", "holds a line break") // never echo the key itself
	}
	for _, p := range c.Percentiles {
		if !(p >= 0 && p <= 100) {
			l.Add("percentiles", "%v is not in [0, 100]", p)
		}
	}
	return l.Err()
}

// sessionValue renders the session scheme for one request: each
// placeholder replaced by its value in one left-to-right pass, the values
// not read again (strings.Replacer's result for these placeholders, none
// a prefix of another, without building a Replacer per request).
func (c Config) sessionValue(session string, index, turn int) string {
	s := c.SessionScheme
	if !strings.Contains(s, "{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "{trial_id}"):
			b.WriteString(c.TrialID)
			s = s[len("{trial_id}"):]
		case strings.HasPrefix(s, "{session}"):
			b.WriteString(session)
			s = s[len("{session}"):]
		case strings.HasPrefix(s, "{index}"):
			b.WriteString(strconv.Itoa(index))
			s = s[len("{index}"):]
		case strings.HasPrefix(s, "{turn}"):
			b.WriteString(strconv.Itoa(turn))
			s = s[len("{turn}"):]
		default:
			b.WriteByte('{')
			s = s[1:]
		}
	}
}
