package kvevents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Config is vLLM's --kv-events-config JSON (KVEventsConfig), with vLLM's
// field names and defaults.
type Config struct {
	EnableKVCacheEvents bool   `json:"enable_kv_cache_events"`
	Publisher           string `json:"publisher,omitempty"`
	Endpoint            string `json:"endpoint,omitempty"`
	ReplayEndpoint      string `json:"replay_endpoint,omitempty"`
	BufferSteps         int    `json:"buffer_steps,omitempty"`
	HWM                 int    `json:"hwm,omitempty"`
	MaxQueueSize        int    `json:"max_queue_size,omitempty"`
	Topic               string `json:"topic,omitempty"`
}

// vLLM's defaults.
const (
	DefaultEndpoint     = "tcp://*:5557"
	DefaultBufferSteps  = 10000
	DefaultMaxQueueSize = 100000
)

// ParseConfig reads the engine argument's JSON. Unknown fields are an
// error naming the field, as are a publisher other than "zmq" or "null"
// and an endpoint that is not tcp://HOST:PORT.
func ParseConfig(s string) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("kv-events-config: %w", err)
	}
	return c, c.Validate()
}

// Enabled reports whether an engine with c publishes events.
func (c Config) Enabled() bool { return c.EnableKVCacheEvents && c.Publisher != "null" }

// Validate checks c; a disabled config is always valid.
func (c Config) Validate() error {
	if !c.EnableKVCacheEvents {
		return nil
	}
	switch c.Publisher {
	case "", "zmq", "null":
	default:
		return fmt.Errorf("kv-events-config.publisher: want \"zmq\" or \"null\", got %q", c.Publisher)
	}
	if _, err := TCPPort(c.WithDefaults().Endpoint); err != nil {
		return fmt.Errorf("kv-events-config.endpoint: %w", err)
	}
	if c.ReplayEndpoint != "" {
		if _, err := TCPPort(c.ReplayEndpoint); err != nil {
			return fmt.Errorf("kv-events-config.replay_endpoint: %w", err)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"buffer_steps", c.BufferSteps}, {"hwm", c.HWM}, {"max_queue_size", c.MaxQueueSize}} {
		if f.v < 0 {
			return fmt.Errorf("kv-events-config.%s: must be >= 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// WithDefaults is c with vLLM's defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.BufferSteps == 0 {
		c.BufferSteps = DefaultBufferSteps
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = DefaultMaxQueueSize
	}
	return c
}

// TCPPort returns the port of a tcp://HOST:PORT endpoint (0: any free port).
func TCPPort(ep string) (int, error) {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return 0, fmt.Errorf("%q: want tcp://HOST:PORT", ep)
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", ep, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return 0, fmt.Errorf("%q: port %q is not 0-65535", ep, p)
	}
	return port, nil
}

// Loopback rewrites a tcp endpoint to listen on 127.0.0.1 whatever host
// it names (vLLM's default binds every interface; the simulator never does).
func Loopback(ep string) (string, error) {
	port, err := TCPPort(ep)
	if err != nil {
		return "", err
	}
	return "tcp://127.0.0.1:" + strconv.Itoa(port), nil
}

// ForReplica is c for the i-th of several engines started together: every
// nonzero endpoint port moves up by i, as vLLM offsets a data-parallel
// rank's, so the engines do not collide.
func (c Config) ForReplica(i int) Config {
	shift := func(ep string) string {
		port, err := TCPPort(ep)
		if err != nil || port == 0 || i == 0 {
			return ep
		}
		return strings.TrimSuffix(ep, strconv.Itoa(port)) + strconv.Itoa(port+i)
	}
	c = c.WithDefaults()
	c.Endpoint = shift(c.Endpoint)
	if c.ReplayEndpoint != "" {
		c.ReplayEndpoint = shift(c.ReplayEndpoint)
	}
	return c
}
