package adapter

import (
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target"
)

// withKVEvents fills router.kv_events from the deployment when the policy
// follows KV events (router.Config.FollowsKVEvents) and the spec names no
// streams: the workers whose
// target knows their KV event sockets (the sim target with
// engine.extra_args.kv_events_config).
func withKVEvents(cfg router.Config, dep *target.Deployment) router.Config {
	if !cfg.FollowsKVEvents() || len(cfg.KVEvents) > 0 || cfg.PDDisaggregation {
		return cfg
	}
	for _, w := range dep.Workers {
		if w.Role == target.Collocated && w.KVEvents != "" {
			cfg.KVEvents = append(cfg.KVEvents, router.KVEventsSource{Worker: w.URL, Endpoint: w.KVEvents, ReplayEndpoint: w.KVEventsReplay})
		}
	}
	return cfg
}
