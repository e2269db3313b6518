package simtarget

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
)

// kvEventsArg reads vLLM's --kv-events-config from the engine's extra
// args (kv_events_config or kv-events-config), so one spec enables KV
// events on the simulator and on `vllm serve`. Every engine of the
// deployment publishes on fresh 127.0.0.1 ports, with a replay socket so a
// router can repair a lost message.
func kvEventsArg(e engine.Config) (kvevents.Config, error) {
	c, ok, err := kvevents.FromExtraArgs(e.ExtraArgs)
	if !ok {
		return kvevents.Config{}, nil
	}
	if err != nil {
		return kvevents.Config{}, fmt.Errorf("engine.extra_args.kv_events_config: %w", err)
	}
	c.Endpoint, c.ReplayEndpoint = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"
	return c, nil
}

// publishKVEndpoints records the started engine's event endpoints on its
// worker and pins them in its options, so a restarted engine publishes
// where the router already listens.
func (w *simWorker) publishKVEndpoints(ctx context.Context) error {
	if !w.opts.KVEvents.Enabled() {
		return nil
	}
	events, replay, err := w.srv.KVEventsEndpoint(ctx)
	if err != nil {
		return fmt.Errorf("%s: KV event endpoints: %w", w.worker, err)
	}
	w.worker.KVEvents, w.worker.KVEventsReplay = events, replay
	w.opts.KVEvents.Endpoint, w.opts.KVEvents.ReplayEndpoint = events, replay
	return nil
}
