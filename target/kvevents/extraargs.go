package kvevents

// FromExtraArgs reads vLLM's --kv-events-config from an engine's extra
// args (kv_events_config or kv-events-config), so one spec enables KV
// events on the simulator and on `vllm serve`; ok is false when neither is
// there.
func FromExtraArgs(args map[string]string) (c Config, ok bool, err error) {
	raw, ok := args["kv_events_config"]
	if !ok {
		raw, ok = args["kv-events-config"]
	}
	if !ok {
		return Config{}, false, nil
	}
	c, err = ParseConfig(raw)
	return c, true, err
}
