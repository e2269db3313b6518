package routerconfig

import (
	"strings"
	"testing"
)

func TestValidateKVEvents(t *testing.T) {
	ok := KVEventsSource{Worker: "http://127.0.0.1:8000", Endpoint: "tcp://127.0.0.1:5557", ReplayEndpoint: "tcp://127.0.0.1:5558"}
	for _, c := range []struct {
		name   string
		policy string
		srcs   []KVEventsSource
		want   string
	}{
		{"valid", "precise_prefix", []KVEventsSource{ok}, ""},
		{"other policy", "cache_aware", []KVEventsSource{ok}, "router.kv_events: only precise_prefix, or weighted with a precise_prefix scorer, follows KV events"},
		{"bad endpoint", "precise_prefix", []KVEventsSource{{Worker: ok.Worker, Endpoint: "ipc:///x"}}, `router.kv_events[0].endpoint: want tcp://HOST:PORT, got "ipc:///x"`},
		{"bad replay", "precise_prefix", []KVEventsSource{{Worker: ok.Worker, Endpoint: ok.Endpoint, ReplayEndpoint: "tcp://h:0"}}, "router.kv_events[0].replay_endpoint"},
		{"bad worker", "precise_prefix", []KVEventsSource{{Worker: "w", Endpoint: ok.Endpoint}}, "router.kv_events[0].worker"},
		{"twice", "precise_prefix", []KVEventsSource{ok, ok}, `router.kv_events[1].worker: "http://127.0.0.1:8000" has two event streams`},
	} {
		cfg := Default()
		cfg.Policy, cfg.KVEvents = c.policy, c.srcs
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	src, err := ParseKVEventsSource("http://w:1=tcp://h:2,tcp://h:3")
	if err != nil || src != (KVEventsSource{Worker: "http://w:1", Endpoint: "tcp://h:2", ReplayEndpoint: "tcp://h:3"}) {
		t.Errorf("ParseKVEventsSource = %+v, %v", src, err)
	}
	for _, s := range []KVEventsSource{src, {Worker: "http://w:1", Endpoint: "tcp://h:2"}, {Worker: "http://w:1", Endpoint: "tcp://h:2", Topic: "kv"}} {
		if back, err := ParseKVEventsSource(s.String()); err != nil || back != s {
			t.Errorf("%+v → %q → %+v, %v", s, s.String(), back, err)
		}
	}
	if _, err := ParseKVEventsSource("tcp://h:2"); err == nil {
		t.Error("a source without WORKER_URL= was accepted")
	}
}

func TestValidateScorers(t *testing.T) {
	for _, c := range []struct {
		policy  string
		scorers []Scorer
		kv      bool
		want    string
	}{
		{"weighted", []Scorer{{"precise_prefix", 2}, {"load", 1}}, true, ""},
		{"weighted", nil, true, ""}, // defaults include precise_prefix
		{"weighted", []Scorer{{"load", 1}}, true, "router.kv_events: only precise_prefix, or weighted with a precise_prefix scorer"},
		{"cache_aware", []Scorer{{"load", 1}}, false, "router.scorers: only the weighted policy combines scorers"},
		{"weighted", []Scorer{{"magic", 1}}, false, "router.scorers[0].name: must be one of prefix, precise_prefix, load, predicted_latency"},
		{"weighted", []Scorer{{"load", 0}}, false, "router.scorers[0].weight: must be > 0"},
	} {
		cfg := Default()
		cfg.Policy, cfg.Scorers = c.policy, c.scorers
		if c.kv {
			cfg.KVEvents = []KVEventsSource{{Worker: "http://127.0.0.1:8000", Endpoint: "tcp://127.0.0.1:5557"}}
		}
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %+v: %v", c.policy, c.scorers, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %+v: error %v, want it to contain %q", c.policy, c.scorers, err, c.want)
		}
	}
}
