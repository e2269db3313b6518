package driver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/driver/arrival"
	"github.com/autoinfer/autoinfer/driver/metrics"
	"github.com/autoinfer/autoinfer/driver/workload"
)

// The driver's sub-package types under the names the rest of autoinfer uses.
type (
	Workload      = workload.Workload
	Arrival       = arrival.Arrival
	Summary       = metrics.Summary
	RequestRecord = metrics.RequestRecord
	SLO           = metrics.SLO
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
	c.Workload = c.Workload.WithDefaults()
	c.Arrival = c.Arrival.Normalized()
	return c
}

// Validate reports the first bad field. Workload and arrival errors are
// prefixed with "workload." and "arrival.".
func (c Config) Validate() error {
	if err := c.Workload.Validate(); err != nil {
		return fmt.Errorf("workload.%w", err)
	}
	if err := c.Arrival.Validate(); err != nil {
		return fmt.Errorf("arrival.%w", err)
	}
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return errors.New("base_url: required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("base_url: want http(s)://host:port, got %q", c.BaseURL)
	case c.Endpoint != "" && c.Endpoint != CompletionsEndpoint && c.Endpoint != ChatEndpoint:
		return fmt.Errorf("endpoint: want %s or %s, got %q", CompletionsEndpoint, ChatEndpoint, c.Endpoint)
	case c.Model == "":
		return errors.New("model: required")
	case c.NumPrompts < 0:
		return fmt.Errorf("num_prompts: must be >= 0, got %d", c.NumPrompts)
	case c.Timeout < 0:
		return fmt.Errorf("timeout: must be > 0, got %v", c.Timeout)
	case c.Goodput.TTFTMs < 0 || c.Goodput.TPOTMs < 0 || c.Goodput.E2ELMs < 0:
		return fmt.Errorf("goodput: bounds must be > 0 ms, got %+v", c.Goodput)
	case strings.ContainsAny(c.SessionHeader, headerNameBreakers):
		return fmt.Errorf("session_header: %q: header names cannot hold spaces, colons or line breaks", c.SessionHeader)
	case strings.ContainsAny(c.RunIDHeader, headerNameBreakers):
		return fmt.Errorf("run_id_header: %q: header names cannot hold spaces, colons or line breaks", c.RunIDHeader)
	}
	for _, p := range c.Percentiles {
		if !(p >= 0 && p <= 100) {
			return fmt.Errorf("percentiles: %v is not in [0, 100]", p)
		}
	}
	return nil
}

// headerNameBreakers are the characters that would end a header name early
// or split the header on the wire.
const headerNameBreakers = " :\r\n"

// sessionValue renders the session scheme for one request.
func (c Config) sessionValue(session string, index, turn int) string {
	return strings.NewReplacer(
		"{trial_id}", c.TrialID,
		"{session}", session,
		"{index}", fmt.Sprint(index),
		"{turn}", fmt.Sprint(turn),
	).Replace(c.SessionScheme)
}
