package routerconfig

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/trials/field"
)

// KVEventsSource is one worker's KV event stream (vLLM's
// --kv-events-config), which the precise_prefix policy follows.
type KVEventsSource struct {
	// Worker is the worker's URL as in worker_urls.
	Worker string `yaml:"worker" json:"worker"`
	// Endpoint is the PUB socket, tcp://HOST:PORT.
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// ReplayEndpoint is the worker's replay socket; without it a lost
	// message cannot be repaired and the worker is scored approximately.
	ReplayEndpoint string `yaml:"replay_endpoint,omitempty" json:"replay_endpoint,omitempty"`
	Topic          string `yaml:"topic,omitempty" json:"topic,omitempty"`
}

// ParseKVEventsSource reads the CLI form WORKER_URL=ENDPOINT[,REPLAY[,TOPIC]]
// (String's output).
func ParseKVEventsSource(s string) (KVEventsSource, error) {
	worker, eps, ok := strings.Cut(s, "=")
	if !ok {
		return KVEventsSource{}, fmt.Errorf("%q: want WORKER_URL=tcp://HOST:PORT[,tcp://REPLAY_HOST:PORT[,TOPIC]]", s)
	}
	ep, rest, _ := strings.Cut(eps, ",")
	replay, topic, _ := strings.Cut(rest, ",")
	return KVEventsSource{Worker: worker, Endpoint: ep, ReplayEndpoint: replay, Topic: topic}, nil
}

// String is s in the CLI form ParseKVEventsSource reads.
func (s KVEventsSource) String() string {
	v := s.Worker + "=" + s.Endpoint
	if s.ReplayEndpoint != "" || s.Topic != "" {
		v += "," + s.ReplayEndpoint
	}
	if s.Topic != "" {
		v += "," + s.Topic
	}
	return v
}

func (c Config) validateKVEvents(l *field.Errors) {
	if len(c.KVEvents) > 0 && !c.FollowsKVEvents() {
		l.Add("router.kv_events", "only %s, or %s with a %s scorer, follows KV events (policy is %q)",
			policy.PrecisePrefix, policy.Weighted, policy.ScorerPrecisePrefix, c.Policy)
	}
	seen := map[string]bool{}
	for i, s := range c.KVEvents {
		path := fmt.Sprintf("router.kv_events[%d]", i)
		l.Check(field.HTTPURL(path+".worker", s.Worker))
		if seen[s.Worker] {
			l.Add(path+".worker", "%q has two event streams", s.Worker)
		}
		seen[s.Worker] = true
		l.Check(tcpEndpoint(path+".endpoint", s.Endpoint, true), tcpEndpoint(path+".replay_endpoint", s.ReplayEndpoint, false))
	}
}

// tcpEndpoint wants tcp://HOST:PORT with a port in 1-65535.
func tcpEndpoint(path, ep string, required bool) error {
	if ep == "" && !required {
		return nil
	}
	rest, ok := strings.CutPrefix(ep, "tcp://")
	host, port, err := net.SplitHostPort(rest)
	n, perr := strconv.Atoi(port)
	if !ok || err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return field.Errorf(path, "want tcp://HOST:PORT, got %q", ep)
	}
	return nil
}
